import {
  InvalidRequest,
  MAX_WEBHOOK_ENDPOINTS,
  type NewWebhookEndpoint,
  NotFound,
  type WebhookEndpointPatch
} from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { traced } from "../observability/spans.ts"
import { Deliveries } from "./Deliveries.ts"
import { refusedUrl } from "./safeRequest.ts"
import { WebhookEndpoints } from "./WebhookEndpoints.ts"

/** The caller, as far as webhooks go: endpoints are its own; staff endpoints receive every order's events. */
export interface Caller {
  readonly id: string
  readonly role: "customer" | "staff"
}

const noSuchEndpoint = (endpointId: string) => new NotFound({ message: `No webhook endpoint has id ${endpointId}` })

const found = <A>(endpointId: string) => (option: Option.Option<A>) =>
  Option.match(option, { onNone: () => Effect.fail(noSuchEndpoint(endpointId)), onSome: Effect.succeed })

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
      })
      if (Option.isNone(created)) {
        return yield* new InvalidRequest({
          message: `A key may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one first`
        })
      }
      yield* Effect.logInfo("webhook endpoint created").pipe(
        Effect.annotateLogs({ apiKeyId: caller.id, endpointId: created.value.endpoint.id })
      )
      return { ...created.value.endpoint, secret: created.value.secret }
    }, traced("WebhookDesk.create")),
    list: (caller: Caller) => endpoints.list(caller.id),
    get: (caller: Caller, endpointId: string) =>
      Effect.flatMap(endpoints.get(caller.id, endpointId), found(endpointId)),
    update: Effect.fnUntraced(function*(caller: Caller, endpointId: string, patch: WebhookEndpointPatch) {
      yield* checkUrl(patch.url)
      return yield* Effect.flatMap(
        endpoints.update(caller.id, endpointId, {
          ...patch,
          ...(patch.eventTypes === undefined ? {} : { eventTypes: [...new Set(patch.eventTypes)] })
        }),
        found(endpointId)
      )
    }, traced("WebhookDesk.update")),
    remove: (caller: Caller, endpointId: string) =>
      Effect.flatMap(
        endpoints.remove(caller.id, endpointId),
        (removed) => removed ? Effect.void : Effect.fail(noSuchEndpoint(endpointId))
      ),
    rotateSecret: (caller: Caller, endpointId: string) =>
      Effect.flatMap(endpoints.rotateSecret(caller.id, endpointId), found(endpointId)),
    test: (caller: Caller, endpointId: string) =>
      Effect.flatMap(deliveries.queueTest(caller.id, endpointId), found(endpointId)).pipe(
        Effect.map((eventId) => ({ eventId }))
      ),
    attempts: (caller: Caller, endpointId: string) =>
      Effect.flatMap(deliveries.attempts(caller.id, endpointId), found(endpointId)),
    redeliver: Effect.fnUntraced(function*(caller: Caller, endpointId: string, eventId: string) {
      yield* Effect.flatMap(endpoints.get(caller.id, endpointId), found(endpointId))
      const queued = yield* deliveries.redeliver(
        { apiKeyId: caller.id, staff: caller.role === "staff" },
        endpointId,
        eventId
      )
      if (!queued) {
        return yield* new NotFound({ message: `No event ${eventId} is yours to redeliver (events are kept 30 days)` })
      }
      return { eventId }
    }, traced("WebhookDesk.redeliver"))
  } satisfies Record<
    string,
    (...args: ReadonlyArray<any>) => Effect.Effect<unknown, InvalidRequest | NotFound | DatabaseError>
  >
})
