import {
  InvalidRequest,
  MAX_WEBHOOK_ENDPOINTS,
  type NewWebhookEndpoint,
  NotFound,
  type WebhookEndpointPatch
} from "@petstore/contract"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { traced } from "../observability/spans.ts"
import { Deliveries } from "./Deliveries.ts"
import { refusedUrl } from "./safeRequest.ts"
import { WebhookEndpoints } from "./WebhookEndpoints.ts"
import type { EndpointLimitReached, EndpointMissing, EventNotRedeliverable } from "./WebhookRefusals.ts"

/** The caller, as far as webhooks go: endpoints are its own; staff endpoints receive every order's events. */
export interface Caller {
  readonly id: string
  readonly role: "customer" | "staff"
}

/**
 * The contract's answer to each refusal of `WebhookEndpoints` and `Deliveries`, taken per operation by
 * `Effect.catchTags`: the compiler checks that every refusal an operation can meet is answered.
 */
const answerEndpointMissing = {
  EndpointMissing: ({ endpointId }: EndpointMissing) =>
    Effect.fail(new NotFound({ message: `No webhook endpoint has id ${endpointId}` }))
}

const answerEndpointLimitReached = {
  EndpointLimitReached: (_: EndpointLimitReached) =>
    Effect.fail(
      new InvalidRequest({
        message: `A key may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one first`
      })
    )
}

const answerEventNotRedeliverable = {
  EventNotRedeliverable: ({ eventId }: EventNotRedeliverable) =>
    Effect.fail(new NotFound({ message: `No event ${eventId} is yours to redeliver (events are kept 30 days)` }))
}

const badUrl = (reason: string) =>
  new InvalidRequest({
    message: `Invalid request body. body.url: ${reason}`,
    details: [{ path: "body.url", message: reason }]
  })

/**
 * What a request does with webhooks: a key's own endpoints (another key's are
 * 404), the URL policy of the operator (https, no private addresses), the bound
 * on endpoints per key, test events and redeliveries.
 */
export class WebhookDesk extends Context.Service<WebhookDesk, Effect.Success<typeof makeDesk>>()(
  "@petstore/server/webhooks/WebhookDesk"
) {
  static readonly layer = Layer.effect(WebhookDesk, Effect.suspend(() => makeDesk))
}

const makeDesk = Effect.gen(function*() {
  const config = yield* AppConfig
  const endpoints = yield* WebhookEndpoints
  const deliveries = yield* Deliveries
  const policy = { allowHttp: config.webhookAllowHttp, allowPrivateAddresses: config.webhookAllowPrivateAddresses }

  const checkUrl = (url: string | undefined) => {
    const reason = url === undefined ? undefined : refusedUrl(url, policy)
    return reason === undefined ? Effect.void : Effect.fail(badUrl(reason))
  }

  return {
    create: Effect.fnUntraced(function*(caller: Caller, endpoint: NewWebhookEndpoint) {
      yield* checkUrl(endpoint.url)
      const created = yield* endpoints.create(caller.id, {
        url: endpoint.url,
        eventTypes: [...new Set(endpoint.eventTypes ?? [])],
        description: endpoint.description ?? ""
      }).pipe(Effect.catchTags(answerEndpointLimitReached))
      yield* Effect.logInfo("webhook endpoint created").pipe(
        Effect.annotateLogs({ apiKeyId: caller.id, endpointId: created.endpoint.id })
      )
      return { ...created.endpoint, secret: created.secret }
    }, traced("WebhookDesk.create")),
    list: (caller: Caller) => endpoints.list(caller.id),
    get: (caller: Caller, endpointId: string) =>
      endpoints.get(caller.id, endpointId).pipe(Effect.catchTags(answerEndpointMissing)),
    update: Effect.fnUntraced(function*(caller: Caller, endpointId: string, patch: WebhookEndpointPatch) {
      yield* checkUrl(patch.url)
      return yield* endpoints.update(caller.id, endpointId, {
        ...patch,
        ...(patch.eventTypes === undefined ? {} : { eventTypes: [...new Set(patch.eventTypes)] })
      }).pipe(Effect.catchTags(answerEndpointMissing))
    }, traced("WebhookDesk.update")),
    remove: (caller: Caller, endpointId: string) =>
      endpoints.remove(caller.id, endpointId).pipe(Effect.catchTags(answerEndpointMissing)),
    rotateSecret: (caller: Caller, endpointId: string) =>
      endpoints.rotateSecret(caller.id, endpointId).pipe(Effect.catchTags(answerEndpointMissing)),
    test: (caller: Caller, endpointId: string) =>
      deliveries.queueTest(caller.id, endpointId).pipe(
        Effect.map((eventId) => ({ eventId })),
        Effect.catchTags(answerEndpointMissing)
      ),
    attempts: (caller: Caller, endpointId: string) =>
      deliveries.attempts(caller.id, endpointId).pipe(Effect.catchTags(answerEndpointMissing)),
    redeliver: Effect.fnUntraced(
      function*(caller: Caller, endpointId: string, eventId: string) {
        yield* endpoints.get(caller.id, endpointId)
        yield* deliveries.redeliver({ apiKeyId: caller.id, staff: caller.role === "staff" }, endpointId, eventId)
        return { eventId }
      },
      (effect) => effect.pipe(Effect.catchTags({ ...answerEndpointMissing, ...answerEventNotRedeliverable })),
      traced("WebhookDesk.redeliver")
    )
  } satisfies Record<
    string,
    (...args: ReadonlyArray<any>) => Effect.Effect<unknown, InvalidRequest | NotFound | DatabaseError>
  >
})
