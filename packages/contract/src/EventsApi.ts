import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { EventId, Events, EventType } from "./Event.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters } from "./OpenApiDocument.ts"
import { DecimalId } from "./Pet.ts"
import { betaOperation, Stability } from "./Versioning.ts"

export const DEFAULT_EVENT_PAGE_SIZE = 20
export const MAX_EVENT_PAGE_SIZE = 100

/** A key may register this many webhook endpoints. */
export const MAX_WEBHOOK_ENDPOINTS = 10

const Timestamp = Schema.String.annotate({ format: "date-time", examples: ["2026-11-25T09:30:00.000Z"] })

export const ListEventsQuery = Schema.Struct({
  limit: Schema.optionalKey(
    DecimalId.check(Schema.isBetween({ minimum: 1, maximum: MAX_EVENT_PAGE_SIZE }, {
      expected: `an integer from 1 to ${MAX_EVENT_PAGE_SIZE}`
    })).annotate({
      description: `Maximum number of events returned, 1–${MAX_EVENT_PAGE_SIZE} (default ${DEFAULT_EVENT_PAGE_SIZE})`
    })
  ),
  type: Schema.optionalKey(EventType),
  cursor: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_-]{1,64}$/u)).annotate({
      description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
    })
  )
})

const listEvents = HttpApiEndpoint.get("listEvents", "/events", {
  query: ListEventsQuery,
  success: HttpApiSchema.WithHeaders(Events, {
    link: Schema.optionalKey(Schema.String.annotate({
      description: "`<url>; rel=\"next\"` on every page: after its last event, or on an empty page (the end of " +
        "the log for now) the same query again, so a poller follows it whether or not more events follow yet"
    }))
  }),
  error: ServiceUnavailable
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listEvents",
  summary: "List events",
  description: "The caller's events, oldest first, a page at a time (keyset pagination through the `Link` header, " +
    "as `GET /pets`): every pet event, the caller's own order events (a staff key: every order's). " +
    "Kept 30 days. An event is listed once every transaction that began before it has ended, so a cursor never " +
    "skips an event that commits late."
}))

export class EventsGroup extends HttpApiGroup.make("events")
  .add(listEvents)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "What happened to pets and orders, as a log to read or webhooks to receive (beta)")
{}

export const WebhookEndpointId = Schema.String.check(Schema.isPattern(/^ep_[0-9a-f]{32}$/u)).annotate({
  description: "Unique identifier of the webhook endpoint",
  examples: ["ep_0c5b2f1e9d8a4b7c6e5f4a3b2c1d0e9f"]
})

export const WebhookSecret = Schema.String.check(Schema.isPattern(/^whsec_[A-Za-z0-9+/]{32}$/u)).annotate({
  description: "The signing secret (Standard Webhooks): `whsec_` and 24 random bytes in base64. " +
    "Shown once, when created or rotated.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
})

export const WebhookUrl = Schema.String.check(
  Schema.isPattern(/^https?:\/\/[^\s]+$/iu, { expected: "an http(s) URL" }),
  Schema.isMaxLength(2048, { expected: "a URL of at most 2048 characters" })
).annotate({
  description: "Where deliveries are POSTed. `https` only, unless the operator allows `http`; addresses in loopback, " +
    "private, link-local or metadata ranges are refused, unless the operator allows them.",
  examples: ["https://example.com/webhooks/petstore"]
})

const EventTypes = Schema.Array(EventType).check(Schema.isMaxLength(16)).annotate({
  description: "The event types sent to this endpoint; empty or left out: every type"
})

const Description = Schema.String.check(Schema.isMaxLength(500, { expected: "at most 500 characters" })).annotate({
  description: "What the endpoint is for, up to 500 characters"
})

export const WebhookEndpoint = Schema.Struct({
  id: WebhookEndpointId,
  url: Schema.String,
  description: Schema.String,
  eventTypes: Schema.Array(EventType),
  enabled: Schema.Boolean.annotate({
    description:
      "Whether events are delivered. Disabled by its key, or by the service: after 5 days of failures, or on 410 Gone"
  }),
  disabledReason: Schema.NullOr(Schema.String).annotate({ description: "Why the service disabled it, if it did" }),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotate({ identifier: "WebhookEndpoint", description: "A URL that receives this key's events, signed" })
export type WebhookEndpoint = typeof WebhookEndpoint.Type

export const CreatedWebhookEndpoint = Schema.Struct({
  ...WebhookEndpoint.fields,
  secret: WebhookSecret
}).annotate({
  identifier: "CreatedWebhookEndpoint",
  description: "A new endpoint, with its signing secret: shown this once"
})

export const NewWebhookEndpoint = Schema.Struct({
  url: WebhookUrl,
  eventTypes: Schema.optionalKey(EventTypes),
  description: Schema.optionalKey(Description)
}).annotate({ identifier: "NewWebhookEndpoint", description: "An endpoint to register" })
export type NewWebhookEndpoint = typeof NewWebhookEndpoint.Type

export const WebhookEndpointPatch = Schema.Struct({
  url: Schema.optionalKey(WebhookUrl),
  eventTypes: Schema.optionalKey(EventTypes),
  description: Schema.optionalKey(Description),
  enabled: Schema.optionalKey(Schema.Boolean.annotate({ description: "`false` stops deliveries; `true` resumes them" }))
}).annotate({
  identifier: "WebhookEndpointPatch",
  description: "The fields to change; those left out keep their value"
})
export type WebhookEndpointPatch = typeof WebhookEndpointPatch.Type

export const RotatedWebhookSecret = Schema.Struct({
  secret: WebhookSecret,
  previousSecretExpiresAt: Timestamp.annotate({
    description: "Until then deliveries carry signatures with both secrets (24 hours)"
  })
}).annotate({ identifier: "RotatedWebhookSecret" })

export const WebhookAttempt = Schema.Struct({
  eventId: EventId,
  attempt: Schema.Int.annotate({ description: "1 for the first attempt of this event at this endpoint" }),
  attemptedAt: Timestamp,
  outcome: Schema.Literals(["succeeded", "failed"]),
  statusCode: Schema.NullOr(Schema.Int).annotate({ description: "The receiver's HTTP status; null when none came" }),
  latencyMs: Schema.Int,
  error: Schema.NullOr(Schema.String).annotate({ description: "Why it failed, when it did" }),
  nextAttemptAt: Schema.NullOr(Timestamp).annotate({ description: "When it is tried again; null when it is not" })
}).annotate({ identifier: "WebhookAttempt", description: "One delivery attempt of one event to one endpoint" })

export const WebhookAttempts = Schema.Array(WebhookAttempt).annotate({
  identifier: "WebhookAttempts",
  description: "The latest 100 attempts, newest first"
})

export const QueuedDelivery = Schema.Struct({ eventId: EventId }).annotate({
  identifier: "QueuedDelivery",
  description: "The event queued for delivery to the endpoint"
})

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
  ["webhook-id", "The event's id: the same on every attempt, so receivers can drop duplicates"],
  ["webhook-timestamp", "Seconds since the Unix epoch when this attempt was signed; refuse it when far from now"],
  [
    "webhook-signature",
    "`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the " +
    "base64-decoded part of the secret after `whsec_`; several, space-separated, while a rotated secret overlaps"
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
      summary: `The \`${type}\` event, delivered`,
      description: "Signed as Standard Webhooks specifies. Answer 2xx within 15 seconds; anything else, a redirect " +
        "included, is retried (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, jittered). " +
        "410 disables the endpoint; 429 and 502–504 may say `Retry-After`.",
      "x-stability": "beta",
      parameters: signedHeaders.map(([name, description]) => ({
        name,
        in: "header",
        required: true,
        description,
        schema: { type: "string" }
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
