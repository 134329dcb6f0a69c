import type { EventType, WebhookEndpoint } from "@petstore/contract"
import { MAX_WEBHOOK_ENDPOINTS } from "@petstore/contract"
import { Context, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { Database } from "../db/Database.ts"
import { type DatabaseError, errorCode } from "../db/DatabaseError.ts"
import { arrayLiteral, sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"
import { EndpointLimitReached, EndpointMissing } from "./WebhookRefusals.ts"

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_OVERLAP = "24 hours"

export const newSecret = () => `whsec_${randomBytes(24).toString("base64")}`
const newEndpointId = () => `ep_${randomBytes(16).toString("hex")}`

/** A row of webhook_endpoints as its statements return it, the secrets left out. */
interface EndpointRow {
  readonly id: string
  readonly url: string
  readonly description: string
  readonly event_types: ReadonlyArray<string> | string
  readonly enabled: boolean
  readonly disabled_reason: string | null
  readonly created_at: Date | string
  readonly updated_at: Date | string
}

/** PGlite and postgres.js both parse text[]; a literal string is parsed here in case a driver does not. */
const textArray = (value: ReadonlyArray<string> | string): ReadonlyArray<string> =>
  typeof value === "string" ? (value === "{}" ? [] : value.slice(1, -1).split(",")) : value

export const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  description: row.description,
  eventTypes: textArray(row.event_types) as ReadonlyArray<EventType>,
  enabled: row.enabled,
  disabledReason: row.disabled_reason,
  createdAt: new Date(row.created_at).toISOString(),
  updatedAt: new Date(row.updated_at).toISOString()
})

const COLUMNS = "id, url, description, event_types, enabled, disabled_reason, created_at, updated_at"

interface NewEndpoint {
  readonly url: string
  readonly eventTypes: ReadonlyArray<EventType>
  readonly description: string
}

export interface EndpointChange {
  readonly url?: string
  readonly eventTypes?: ReadonlyArray<EventType>
  readonly description?: string
  readonly enabled?: boolean
}

/** The endpoint a statement on `id` returned; no row: the key has no such endpoint. */
const owned = <Row, A>(id: string, row: Row | undefined, answer: (row: Row) => A) =>
  row === undefined ? Effect.fail(new EndpointMissing({ endpointId: id })) : Effect.succeed(answer(row))

/**
 * The webhook_endpoints table: all of its SQL. Every statement is scoped to
 * the owning key: another key's endpoint does not exist for it (`EndpointMissing`).
 */
export class WebhookEndpoints extends Context.Service<WebhookEndpoints, {
  readonly create: (
    apiKeyId: string,
    endpoint: { readonly url: string; readonly eventTypes: ReadonlyArray<EventType>; readonly description: string }
  ) => Effect.Effect<
    { readonly endpoint: WebhookEndpoint; readonly secret: string },
    EndpointLimitReached | DatabaseError
  >
  readonly list: (apiKeyId: string) => Effect.Effect<ReadonlyArray<WebhookEndpoint>, DatabaseError>
  readonly get: (apiKeyId: string, id: string) => Effect.Effect<WebhookEndpoint, EndpointMissing | DatabaseError>
  /** Disabling drops the endpoint's queued deliveries; enabling clears its failure record. */
  readonly update: (
    apiKeyId: string,
    id: string,
    change: EndpointChange
  ) => Effect.Effect<WebhookEndpoint, EndpointMissing | DatabaseError>
  readonly remove: (apiKeyId: string, id: string) => Effect.Effect<void, EndpointMissing | DatabaseError>
  readonly rotateSecret: (
    apiKeyId: string,
    id: string
  ) => Effect.Effect<
    { readonly secret: string; readonly previousSecretExpiresAt: string },
    EndpointMissing | DatabaseError
  >
}>()("@petstore/server/webhooks/WebhookEndpoints") {
  static readonly layer = Layer.effect(
    WebhookEndpoints,
    Effect.gen(function*() {
      const db = yield* Database

      // The insert takes the key's lowest free slot (migration 0014): at most MAX_WEBHOOK_ENDPOINTS, whatever the
      // concurrency. Two creates that pick the same slot conflict (23505); the loser tries again with a fresh look.
      const insert = (apiKeyId: string, endpoint: NewEndpoint, secret: string) =>
        db.query<EndpointRow>({
          text: `
            INSERT INTO webhook_endpoints (id, api_key_id, url, event_types, description, secret, slot)
            SELECT $2, k.id, $3, $4::text[], $5, $6, free.slot
            FROM api_keys AS k,
              LATERAL (SELECT min(s) AS slot FROM generate_series(1, $7::integer) AS s
                       WHERE s NOT IN (SELECT slot FROM webhook_endpoints WHERE api_key_id = $1)) AS free
            WHERE k.id = $1 AND free.slot IS NOT NULL
            RETURNING ${COLUMNS}`,
          values: [
            apiKeyId,
            newEndpointId(),
            endpoint.url,
            arrayLiteral(endpoint.eventTypes),
            endpoint.description,
            secret,
            MAX_WEBHOOK_ENDPOINTS
          ]
        })

      const create = Effect.fnUntraced(function*(apiKeyId: string, endpoint: NewEndpoint) {
        const secret = newSecret()
        const [row] = yield* insert(apiKeyId, endpoint, secret).pipe(
          Effect.retry({
            times: 2 * MAX_WEBHOOK_ENDPOINTS,
            while: (error) => errorCode(error.cause) === "23505"
          })
        )
        // No row: the key has no free slot (or is gone, which its authentication a moment ago makes a race).
        if (row === undefined) return yield* new EndpointLimitReached({ apiKeyId })
        return { endpoint: toEndpoint(row), secret }
      }, traced("WebhookEndpoints.create"))

      const list = (apiKeyId: string) =>
        db.query<EndpointRow>({
          text: `SELECT ${COLUMNS} FROM webhook_endpoints WHERE api_key_id = $1 ORDER BY created_at, id`,
          values: [apiKeyId]
        }).pipe(Effect.map((rows) => rows.map(toEndpoint)))

      const get = (apiKeyId: string, id: string) =>
        db.query<EndpointRow>({
          text: `SELECT ${COLUMNS} FROM webhook_endpoints WHERE api_key_id = $1 AND id = $2`,
          values: [apiKeyId, id]
        }).pipe(Effect.flatMap(([row]) => owned(id, row, toEndpoint)))

      const update = Effect.fnUntraced(function*(apiKeyId: string, id: string, change: EndpointChange) {
        const [row] = yield* db.query<EndpointRow>({
          text: `
            WITH changed AS (
              UPDATE webhook_endpoints SET
                url = COALESCE($3::text, url),
                event_types = COALESCE($4::text[], event_types),
                description = COALESCE($5::text, description),
                enabled = COALESCE($6::boolean, enabled),
                disabled_reason = CASE WHEN $6::boolean IS NULL THEN disabled_reason ELSE NULL END,
                failing_since = CASE WHEN $6::boolean THEN NULL ELSE failing_since END,
                updated_at = now()
              WHERE api_key_id = $1 AND id = $2
              RETURNING ${COLUMNS}
            ), dropped AS (
              DELETE FROM webhook_messages WHERE endpoint_id = $2 AND $6::boolean IS FALSE AND EXISTS (SELECT 1 FROM changed)
            )
            SELECT * FROM changed`,
          values: [
            apiKeyId,
            id,
            change.url ?? null,
            change.eventTypes === undefined ? null : arrayLiteral(change.eventTypes),
            change.description ?? null,
            change.enabled ?? null
          ]
        })
        return yield* owned(id, row, toEndpoint)
      }, traced("WebhookEndpoints.update"))

      const remove = (apiKeyId: string, id: string) =>
        db.query(sql`DELETE FROM webhook_endpoints WHERE api_key_id = ${apiKeyId} AND id = ${id} RETURNING id`).pipe(
          Effect.flatMap(([row]) => owned(id, row, () => undefined))
        )

      const rotateSecret = Effect.fnUntraced(function*(apiKeyId: string, id: string) {
        const secret = newSecret()
        const [row] = yield* db.query<{ readonly expires: Date | string }>(sql`
          UPDATE webhook_endpoints SET previous_secret = secret, secret = ${secret},
            previous_secret_expires_at = now() + ${SECRET_OVERLAP}::interval, updated_at = now()
          WHERE api_key_id = ${apiKeyId} AND id = ${id}
          RETURNING previous_secret_expires_at AS expires`)
        return yield* owned(
          id,
          row,
          (row) => ({ secret, previousSecretExpiresAt: new Date(row.expires).toISOString() })
        )
      }, traced("WebhookEndpoints.rotateSecret"))

      return WebhookEndpoints.of({ create, list, get, update, remove, rotateSecret })
    })
  )
}
