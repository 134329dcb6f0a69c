import { EventType } from "./Event.ts"

const signedHeaders = [
  [
    "webhook-id",
    "The event's id: the same on every attempt, so receivers can drop duplicates",
    { type: "string", pattern: "^evt_[0-9a-f]{32}$", examples: ["evt_2f6c0e1b9a8d4c7e8f1a2b3c4d5e6f70"] }
  ],
  [
    "webhook-timestamp",
    "Seconds since the Unix epoch when this attempt was signed; refuse it when far from now",
    { type: "string", pattern: "^[0-9]{1,12}$", examples: ["1795305600"] }
  ],
  [
    "webhook-signature",
    "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the " +
    "base64-decoded part of the secret after `whsec_`; several, space-separated, while a rotated secret overlaps",
    {
      type: "string",
      pattern: "^v1,[A-Za-z0-9+/]{43}=(?: v1,[A-Za-z0-9+/]{43}=)*$",
      examples: ["v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="]
    }
  ]
] as const

/**
 * An API transform: the OpenAPI 3.1 top-level `webhooks`, one per event type,
 * each a POST of its event schema with the Standard Webhooks headers.
 */
export const documentWebhooks = (spec: Record<string, any>): Record<string, any> => {
  const schemaOf = (type: string) =>
    type.startsWith("pet.") ? "PetEvent" : type.startsWith("order.") ? "OrderEvent" : "WebhookTestEvent"
  const webhooks = Object.fromEntries(EventType.literals.map((type) => [type, {
    post: {
      operationId: `${type.replace(/\.(.)/u, (_, c: string) => c.toUpperCase())}Webhook`,
      // A summary is plain text (OpenAPI): documentation pages show backticks as they are.
      summary: `The ${type} event, delivered`,
      // Under the webhooks tag, beside the operations that manage endpoints: one section for webhooks.
      tags: ["webhooks"],
      description: "Signed as Standard Webhooks specifies. Answer 2xx within 15 seconds; anything else, a redirect " +
        "included, is retried (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, jittered). " +
        "410 disables the endpoint; 429 and 502–504 may say `Retry-After`.",
      "x-stability": "beta",
      parameters: signedHeaders.map(([name, description, schema]) => ({
        name,
        in: "header",
        required: true,
        description,
        schema
      })),
      requestBody: {
        required: true,
        content: { "application/json": { schema: { $ref: `#/components/schemas/${schemaOf(type)}` } } }
      },
      responses: {
        "2XX": { description: "Received" },
        "410": { description: "Gone: the endpoint is disabled" }
      }
    }
  }]))
  return { ...spec, webhooks }
}
