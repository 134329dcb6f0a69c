import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters } from "./OpenApiDocument.ts"
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

/** A key may register this many webhook endpoints. */
export const MAX_WEBHOOK_ENDPOINTS = 10

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
