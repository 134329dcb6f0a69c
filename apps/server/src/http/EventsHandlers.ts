import {
  CurrentApiKey,
  DEFAULT_EVENT_PAGE_SIZE,
  EVENT_CURSOR_PATTERN,
  InvalidRequest,
  PetstoreApi
} from "@petstore/contract"
import { Effect } from "effect"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { type EventPosition, Events, START } from "../events/Events.ts"
import { WebhookDesk } from "../webhooks/WebhookDesk.ts"
import { withoutDatabaseError } from "./databaseFailures.ts"
import { PublicUrl } from "./PublicUrl.ts"

/**
 * An events cursor: the last event's position (transaction id, order of writing) as `events:<tx>.<seq>`,
 * in hexadecimal, opaque to clients. Hexadecimal, not base64url, so that the OpenAPI document's pattern
 * (`EVENT_CURSOR_PATTERN`) can say exactly which cursors are issued: a base64 character mixes the bits of
 * neighbouring bytes. A transaction id has 19 digits at most until PostgreSQL's xid8 passes 10^19.
 */
export const encodeEventCursor = (after: EventPosition) =>
  Buffer.from(`events:${after.tx}.${after.seq}`).toString("hex")

const EVENT_POSITION = /^events:([1-9][0-9]{0,18})\.([1-9][0-9]{0,14})$/

/** The position spelled by a cursor of an earlier version: base64url, which receivers may have kept to read on later. */
const EARLIER_EVENT_CURSOR = /^events:([0-9]{1,20})\.([1-9][0-9]{0,15})$/

const positionOf = (cursor: string): EventPosition | undefined => {
  if (EVENT_CURSOR_PATTERN.test(cursor)) {
    const match = EVENT_POSITION.exec(Buffer.from(cursor, "hex").toString("latin1"))
    return match === null ? undefined : { tx: match[1]!, seq: Number(match[2]) }
  }
  const earlier = EARLIER_EVENT_CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return earlier !== null && Number.isSafeInteger(Number(earlier[2])) && BigInt(earlier[1]!) < 2n ** 64n
    ? { tx: earlier[1]!, seq: Number(earlier[2]) }
    : undefined
}

export const decodeEventCursor = (cursor: string | undefined) => {
  if (cursor === undefined) return Effect.succeed(START)
  const position = positionOf(cursor)
  return position !== undefined
    ? Effect.succeed(position)
    : Effect.fail(
      new InvalidRequest({
        message: "Invalid request query. query.cursor: not a cursor this service issued",
        details: [{ path: "query.cursor", message: "not a cursor this service issued" }]
      })
    )
}

/** `GET /v1/events` (beta): the caller's events, a keyset page at a time. */
export const EventsHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "events",
  Effect.fn(function*(handlers) {
    const events = withoutDatabaseError(yield* Events)
    const publicUrl = yield* PublicUrl
    return handlers.handle("listEvents", ({ query, request }) =>
      Effect.gen(function*() {
        const limit = query.limit ?? DEFAULT_EVENT_PAGE_SIZE
        const after = yield* decodeEventCursor(query.cursor)
        const key = yield* CurrentApiKey
        const page = yield* events.list(
          { apiKeyId: key.id, staff: key.role === "staff" },
          { limit, type: query.type, after }
        )
        // Every page links on, so that a poller only follows links: after its last event, or, on an empty
        // page at the end of the log, the same query again (no cursor yet when the log was empty from the start).
        const params = new URLSearchParams({ limit: String(limit) })
        if (query.type !== undefined) params.set("type", query.type)
        if (page.nextAfter !== START) params.set("cursor", encodeEventCursor(page.nextAfter))
        const link = `<${publicUrl.of(request, `/v1/events?${params}`)}>; rel="next"`
        return HttpApiSchema.withHeaders({ body: page.events, headers: { link } })
      }))
  })
)

/** Webhook endpoints (beta): each operation calls `WebhookDesk` as the calling key. */
export const WebhooksHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "webhooks",
  Effect.fn(function*(handlers) {
    const desk = withoutDatabaseError(yield* WebhookDesk)
    return handlers
      .handle(
        "createWebhookEndpoint",
        ({ payload }) => CurrentApiKey.use((key) => desk.create(key, payload))
      )
      .handle("listWebhookEndpoints", () => CurrentApiKey.use((key) => desk.list(key)))
      .handle(
        "getWebhookEndpoint",
        ({ params }) => CurrentApiKey.use((key) => desk.get(key, params.endpointId))
      )
      .handle(
        "updateWebhookEndpoint",
        ({ params, payload }) => CurrentApiKey.use((key) => desk.update(key, params.endpointId, payload))
      )
      .handle(
        "deleteWebhookEndpoint",
        ({ params }) => CurrentApiKey.use((key) => desk.remove(key, params.endpointId))
      )
      .handle(
        "rotateWebhookSecret",
        ({ params }) => CurrentApiKey.use((key) => desk.rotateSecret(key, params.endpointId))
      )
      .handle(
        "testWebhookEndpoint",
        ({ params }) => CurrentApiKey.use((key) => desk.test(key, params.endpointId))
      )
      .handle(
        "listWebhookAttempts",
        ({ params }) => CurrentApiKey.use((key) => desk.attempts(key, params.endpointId))
      )
      .handle(
        "redeliverWebhookEvent",
        ({ params, payload }) => CurrentApiKey.use((key) => desk.redeliver(key, params.endpointId, payload.eventId))
      )
  })
)
