import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { Events, EventType } from "./Event.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters } from "./OpenApiDocument.ts"
import { DECIMAL_SPELLING, DecimalId } from "./Pet.ts"
import { betaOperation, Stability } from "./Versioning.ts"
import {
  CreatedWebhookEndpoint,
  NewWebhookEndpoint,
  QueuedDelivery,
  RotatedWebhookSecret,
  WebhookAttempts,
  WebhookEndpoint,
  WebhookEndpointId,
  WebhookEndpointPatch
} from "./WebhookEndpoints.ts"

export const DEFAULT_EVENT_PAGE_SIZE = 20
export const MAX_EVENT_PAGE_SIZE = 100

/** A key may register this many webhook endpoints. */
export const MAX_WEBHOOK_ENDPOINTS = 10

export const EventPageSize = DecimalId.check(Schema.isBetween({ minimum: 1, maximum: MAX_EVENT_PAGE_SIZE }, {
  expected: `an integer from 1 to ${MAX_EVENT_PAGE_SIZE}`
})).annotate({ default: DEFAULT_EVENT_PAGE_SIZE })

/** Hexadecimal of each byte of an ASCII text: how the events cursor spells its fixed parts. */
const hexOf = (text: string) =>
  Array.from(text, (character) => character.charCodeAt(0).toString(16).padStart(2, "0")).join("")
const HEX_DIGIT_BYTE = "3[0-9]"
const HEX_NONZERO_DIGIT_BYTE = "3[1-9]"

/**
 * The cursors this version issues, as a pattern: lowercase hexadecimal of
 * `events:<tx>.<seq>`, the last event's position (its transaction id, up to 19
 * digits, and its order of writing, up to 15), each without a leading zero
 * (`encodeEventCursor` in the server). Hexadecimal keeps one byte to two
 * characters, so the pattern says exactly what is issued; the server refuses
 * any other value, except the base64url cursors of earlier versions.
 */
export const EVENT_CURSOR_PATTERN = new RegExp(
  `^${hexOf("events:")}${HEX_NONZERO_DIGIT_BYTE}(?:${HEX_DIGIT_BYTE}){0,18}${hexOf(".")}` +
    `${HEX_NONZERO_DIGIT_BYTE}(?:${HEX_DIGIT_BYTE}){0,14}$`,
  "u"
)

export const ListEventsQuery = Schema.Struct({
  limit: Schema.optionalKey(EventPageSize.annotate({
    description: `Maximum number of events returned, 1–${MAX_EVENT_PAGE_SIZE} (default ${DEFAULT_EVENT_PAGE_SIZE})`
  })),
  type: Schema.optionalKey(EventType),
  cursor: Schema.optionalKey(Schema.String.annotate({
    description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
  }))
})

/** `limit` and `cursor` described by value in the OpenAPI document, where Effect would show strings. */
const listEventsParameters = describeParameters({
  limit: {
    value: Schema.toType(EventPageSize),
    description: `Maximum number of events returned, 1–${MAX_EVENT_PAGE_SIZE} (default ${DEFAULT_EVENT_PAGE_SIZE}). ` +
      `${DECIMAL_SPELLING}.`
  },
  cursor: {
    value: Schema.String.check(Schema.isPattern(EVENT_CURSOR_PATTERN)),
    description: "Where the page starts: copy it from the previous page's `Link: <…>; rel=\"next\"` URL, or keep " +
      "the one that led to the last page to read on later. Leave it out for the first page. Treat it as opaque: the " +
      "pattern shows the cursors this version issues, so that schema-driven tools can make valid ones; any other " +
      "value is 400.",
    offByDefault: {
      summary: "A cursor from a Link header (leave it out for the first page)",
      value: "6576656e74733a3734312e3132"
    }
  }
})

const listEvents = HttpApiEndpoint.get("listEvents", "/events", {
  query: ListEventsQuery,
  success: HttpApiSchema.WithHeaders(Events, {
    link: Schema.optionalKey(Schema.String.annotate({
      description: "`<url>; rel=\"next\"` on every page: after its last event, or on an empty page (the end of " +
        "the log for now) the same query again, so a poller follows it whether or not more events follow yet",
      examples: ["<https://pets.example.com/v1/events?limit=20&cursor=6576656e74733a3734312e3132>; rel=\"next\""]
    }))
  }),
  error: ServiceUnavailable
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listEvents",
  summary: "List events",
  description: "The caller's events, oldest first, a page at a time (keyset pagination through the `Link` header, " +
    "as `GET /pets`): every pet event, the caller's own order events (a staff key: every order's). " +
    "Kept 30 days. An event is listed once every transaction that began before it has ended, so a cursor never " +
    "skips an event that commits late.",
  transform: listEventsParameters
}))

export class EventsGroup extends HttpApiGroup.make("events")
  .add(listEvents)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "What happened to pets and orders, as a log to read or webhooks to receive (beta)")
{}

const endpointParams = { endpointId: WebhookEndpointId }

const createWebhookEndpoint = HttpApiEndpoint.post("createWebhookEndpoint", "/webhooks/endpoints", {
  payload: NewWebhookEndpoint,
  success: CreatedWebhookEndpoint.pipe(HttpApiSchema.status(201)),
  error: [InvalidRequest, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "createWebhookEndpoint",
  summary: "Register a webhook endpoint",
  description: `Up to ${MAX_WEBHOOK_ENDPOINTS} per key. The answer carries the signing secret, shown this once.`
}))

const listWebhookEndpoints = HttpApiEndpoint.get("listWebhookEndpoints", "/webhooks/endpoints", {
  success: Schema.Array(WebhookEndpoint),
  error: ServiceUnavailable
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listWebhookEndpoints",
  summary: "List webhook endpoints",
  description: "The caller's endpoints, oldest first (at most " + MAX_WEBHOOK_ENDPOINTS + ")."
}))

const idParameter = describeParameters({ endpointId: { description: "The endpoint's id, `ep_…`" } })

const getWebhookEndpoint = HttpApiEndpoint.get("getWebhookEndpoint", "/webhooks/endpoints/:endpointId", {
  params: endpointParams,
  success: WebhookEndpoint,
  error: [NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "getWebhookEndpoint",
  summary: "Get a webhook endpoint",
  description: "One of the caller's endpoints; another key's is 404.",
  transform: idParameter
}))

const updateWebhookEndpoint = HttpApiEndpoint.patch("updateWebhookEndpoint", "/webhooks/endpoints/:endpointId", {
  params: endpointParams,
  payload: WebhookEndpointPatch,
  success: WebhookEndpoint,
  error: [InvalidRequest, NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "updateWebhookEndpoint",
  summary: "Change, enable or disable a webhook endpoint",
  description: "Changes the URL, the event types or the description; `enabled` turns deliveries off and on " +
    "(enabling clears the failure record). Events while disabled are not queued: read them from `GET /events`.",
  transform: idParameter
}))

const deleteWebhookEndpoint = HttpApiEndpoint.delete("deleteWebhookEndpoint", "/webhooks/endpoints/:endpointId", {
  params: endpointParams,
  success: HttpApiSchema.NoContent,
  error: [NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "deleteWebhookEndpoint",
  summary: "Delete a webhook endpoint",
  description: "Deletes it with its queued deliveries and attempts.",
  transform: idParameter
}))

const rotateWebhookSecret = HttpApiEndpoint.post(
  "rotateWebhookSecret",
  "/webhooks/endpoints/:endpointId/rotate-secret",
  {
    params: endpointParams,
    success: RotatedWebhookSecret,
    error: [NotFound, ServiceUnavailable]
  }
).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "rotateWebhookSecret",
  summary: "Rotate a webhook endpoint's signing secret",
  description:
    "A new secret, shown once. For 24 hours deliveries carry two signatures, with the new secret and the old.",
  transform: idParameter
}))

const testWebhookEndpoint = HttpApiEndpoint.post("testWebhookEndpoint", "/webhooks/endpoints/:endpointId/test", {
  params: endpointParams,
  success: QueuedDelivery.pipe(HttpApiSchema.status(202)),
  error: [NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "testWebhookEndpoint",
  summary: "Send a test event",
  description: "Queues a `webhook.test` event for this endpoint alone; its attempts show how the receiver answered.",
  transform: idParameter
}))

const listWebhookAttempts = HttpApiEndpoint.get("listWebhookAttempts", "/webhooks/endpoints/:endpointId/attempts", {
  params: endpointParams,
  success: WebhookAttempts,
  error: [NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listWebhookAttempts",
  summary: "List delivery attempts",
  description:
    "The endpoint's latest 100 delivery attempts, newest first: outcome, status, latency, error, next attempt.",
  transform: idParameter
}))

const redeliverWebhookEvent = HttpApiEndpoint.post(
  "redeliverWebhookEvent",
  "/webhooks/endpoints/:endpointId/redeliver",
  {
    params: endpointParams,
    payload: QueuedDelivery,
    success: QueuedDelivery.pipe(HttpApiSchema.status(202)),
    error: [NotFound, ServiceUnavailable]
  }
).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "redeliverWebhookEvent",
  summary: "Redeliver an event",
  description: "Queues one of the caller's events (within the retention) for this endpoint again, with the same " +
    "`webhook-id`. 404 when the caller cannot see the event.",
  transform: idParameter
}))

export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    createWebhookEndpoint,
    listWebhookEndpoints,
    getWebhookEndpoint,
    updateWebhookEndpoint,
    deleteWebhookEndpoint,
    rotateWebhookSecret,
    testWebhookEndpoint,
    listWebhookAttempts,
    redeliverWebhookEvent
  )
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(
    OpenApi.Description,
    "Endpoints that receive the key's events, signed as Standard Webhooks specifies (beta)"
  )
{}

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
