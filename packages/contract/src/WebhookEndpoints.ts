import { Schema } from "effect"
import { EventId, EventType } from "./Event.ts"
import { TRIMMED_WHITESPACE } from "./Names.ts"

/** The webhook endpoints a key registers, and the attempts to deliver to them: what the webhooks operations carry. */

const Timestamp = Schema.String.annotate({ format: "date-time", examples: ["2026-11-25T09:30:00.000Z"] })

export const WebhookEndpointId = Schema.String.check(Schema.isPattern(/^ep_[0-9a-f]{32}$/u)).annotate({
  description: "Unique identifier of the webhook endpoint",
  examples: ["ep_0c5b2f1e9d8a4b7c6e5f4a3b2c1d0e9f"]
})

export const WebhookSecret = Schema.String.check(Schema.isPattern(/^whsec_[A-Za-z0-9+/]{32}$/u)).annotate({
  description: "The signing secret (Standard Webhooks): `whsec_` and 24 random bytes in base64. " +
    "Shown once, when created or rotated.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
})

/**
 * An http(s) URL without whitespace. Spelled without flags (the scheme's case
 * in classes, whitespace as ECMAScript's `\s` listed out): the OpenAPI
 * generator drops a pattern with the `i` flag, and regex dialects differ on `\s`.
 */
const HTTP_URL = new RegExp(`^[Hh][Tt][Tt][Pp][Ss]?://[^${TRIMMED_WHITESPACE}]+$`, "u")

export const WebhookUrl = Schema.String.check(
  Schema.isPattern(HTTP_URL, { expected: "an http(s) URL" }),
  Schema.isMaxLength(2048, { expected: "a URL of at most 2048 characters" })
).annotate({
  description: "Where deliveries are POSTed, without credentials or fragment. `https` only, unless the operator " +
    "allows `http`; addresses in loopback, private, link-local or metadata ranges are refused, unless the operator " +
    "allows them.",
  examples: ["https://example.com/webhooks/petstore"]
})

const EventTypes = Schema.Array(EventType).check(Schema.isMaxLength(16)).annotate({
  description: "The event types sent to this endpoint; empty or left out: every type"
})

const Description = Schema.String.check(Schema.isMaxLength(500, { expected: "at most 500 characters" })).annotate({
  description: "What the endpoint is for, up to 500 characters",
  examples: ["Adoption notices for the front desk"]
})

export const WebhookEndpoint = Schema.Struct({
  id: WebhookEndpointId,
  url: Schema.String.annotate({ examples: ["https://example.com/webhooks/petstore"] }),
  description: Schema.String.annotate({ examples: ["Adoption notices for the front desk"] }),
  eventTypes: Schema.Array(EventType),
  enabled: Schema.Boolean.annotate({
    description:
      "Whether events are delivered. Disabled by its key, or by the service: after 5 days of failures, or on 410 Gone",
    examples: [true]
  }),
  disabledReason: Schema.NullOr(Schema.String.annotate({ examples: ["the receiver answered 410 Gone"] })).annotate({
    description: "Why the service disabled it, if it did"
  }),
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
  enabled: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "`false` stops deliveries; `true` resumes them", examples: [false] })
  )
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
  attempt: Schema.Int.annotate({
    description: "1 for the first attempt of this event at this endpoint",
    examples: [1]
  }),
  attemptedAt: Timestamp,
  outcome: Schema.Literals(["succeeded", "failed"]),
  statusCode: Schema.NullOr(Schema.Int.annotate({ examples: [200] })).annotate({
    description: "The receiver's HTTP status; null when none came"
  }),
  latencyMs: Schema.Int.annotate({ description: "How long the receiver took to answer", examples: [84] }),
  error: Schema.NullOr(Schema.String.annotate({ examples: ["the receiver answered 503"] })).annotate({
    description: "Why it failed, when it did"
  }),
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
