import {
  type ApiKeyId,
  type CreateKeyRequest,
  InvalidRequest,
  type KeyRole,
  type Plan,
  planQuotas,
  type QuotaLimits,
  type UpdateKeyRequest
} from "@petstore/contract"
import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"

export interface ApiKey {
  readonly id: ApiKeyId
  readonly name: string
  readonly plan: Plan
  readonly limits: QuotaLimits
  readonly role: KeyRole
  readonly createdAt: Date
}

/** Secrets are random (256 bits) and recognisable by their prefix in logs and scanners. */
const SECRET_PREFIX = "psk_"

/**
 * How long a looked-up key is trusted without asking the database again.
 * Changes are announced to every process at once (LISTEN/NOTIFY); this bounds
 * the delay should an announcement be lost, e.g. while reconnecting.
 */
export const KEY_CACHE_TTL_MILLIS = 4_000
const KEYS_CHANGED_CHANNEL = "api_keys_changed"
const KEY_CACHE_MAX_ENTRIES = 10_000

const hashSecret = (secret: string) => createHash("sha256").update(secret).digest("hex")
const newKeyId = () => `key_${randomBytes(8).toString("hex")}` as ApiKeyId
const newSecret = () => `${SECRET_PREFIX}${randomBytes(32).toString("base64url")}`

interface ApiKeyRow {
  readonly id: ApiKeyId
  readonly name: string
  readonly plan: Plan
  readonly per_minute: number | null
  readonly per_day: number | null
  readonly role: KeyRole
  readonly created_at: Date | string
}

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  limits: row.plan === "enterprise"
    ? { perMinute: row.per_minute!, perDay: row.per_day! }
    : planQuotas[row.plan],
  role: row.role,
  createdAt: new Date(row.created_at)
})

/** Enterprise keys carry their own limits; every other plan's limits are the plan's. */
const checkPlanLimits = (plan: Plan, limits: QuotaLimits | undefined) => {
  if (plan === "enterprise" && limits === undefined) {
    return Effect.fail(
      new InvalidRequest({
        message: "An enterprise key needs `limits`",
        details: [{ path: "body.limits", message: "required for the enterprise plan" }]
      })
    )
  }
  if (plan !== "enterprise" && limits !== undefined) {
    return Effect.fail(
      new InvalidRequest({
        message: `The ${plan} plan has fixed limits; \`limits\` is only for enterprise keys`,
        details: [{ path: "body.limits", message: "allowed only with the enterprise plan" }]
      })
    )
  }
  return Effect.void
}

/** The api_keys table: issuing, looking up and revoking keys. All of its SQL is here. */
export class ApiKeys extends Context.Service<ApiKeys, {
  /** The live key with this id, if any. */
  readonly find: (id: ApiKeyId) => Effect.Effect<Option.Option<ApiKey>, DatabaseError>
  /** The live key a bearer secret belongs to, if any. */
  readonly authenticate: (secret: Redacted.Redacted<string>) => Effect.Effect<Option.Option<ApiKey>, DatabaseError>
  readonly create: (
    request: CreateKeyRequest
  ) => Effect.Effect<{ readonly key: ApiKey; readonly secret: string }, InvalidRequest | DatabaseError>
  readonly list: Effect.Effect<ReadonlyArray<ApiKey>, DatabaseError>
  readonly update: (
    id: ApiKeyId,
    request: UpdateKeyRequest
  ) => Effect.Effect<Option.Option<ApiKey>, InvalidRequest | DatabaseError>
  /** True when a live key was revoked. */
  readonly revoke: (id: ApiKeyId) => Effect.Effect<boolean, DatabaseError>
}>()("@petstore/server/auth/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      const db = yield* Database
      const cache = new Map<string, { readonly key: ApiKey; readonly expiresAt: number }>()
      /**
       * Counts the cache's clearings. A lookup caches its answer only if none
       * happened while it read: a key revoked (or changed) while its lookup was
       * in flight is never put back as it was before.
       */
      let generation = 0
      const forgetAll = () => {
        generation++
        cache.clear()
      }
      yield* db.listen(KEYS_CHANGED_CHANNEL, forgetAll)
      const announceChange = (id: ApiKeyId) => db.query(sql`SELECT pg_notify(${KEYS_CHANGED_CHANNEL}, ${id})`)

      const find = (id: ApiKeyId) =>
        db.query<ApiKeyRow>(
          sql`SELECT id, name, plan, per_minute, per_day, role, created_at FROM api_keys WHERE id = ${id} AND revoked_at IS NULL`
        ).pipe(
          Effect.map((rows) => Option.map(Option.fromUndefinedOr(rows[0]), toApiKey))
        )

      const authenticate = Effect.fnUntraced(function*(secret: Redacted.Redacted<string>) {
        const value = Redacted.value(secret)
        if (!value.startsWith(SECRET_PREFIX)) return Option.none<ApiKey>()
        const hash = hashSecret(value)
        const now = yield* Clock.currentTimeMillis
        const cached = cache.get(hash)
        if (cached !== undefined && cached.expiresAt > now) return Option.some(cached.key)
        const readFrom = generation
        const rows = yield* db.query<ApiKeyRow>(
          sql`SELECT id, name, plan, per_minute, per_day, role, created_at FROM api_keys WHERE secret_hash = ${hash} AND revoked_at IS NULL`
        )
        const key = Option.map(Option.fromUndefinedOr(rows[0]), toApiKey)
        if (Option.isSome(key) && readFrom === generation) {
          if (cache.size >= KEY_CACHE_MAX_ENTRIES) cache.clear()
          cache.set(hash, { key: key.value, expiresAt: now + KEY_CACHE_TTL_MILLIS })
        } else {
          cache.delete(hash)
        }
        return key
      }, traced("ApiKeys.authenticate"))

      const create = Effect.fnUntraced(function*(request: CreateKeyRequest) {
        yield* checkPlanLimits(request.plan, request.limits)
        const secret = newSecret()
        const [row] = yield* db.query<ApiKeyRow>(sql`
          INSERT INTO api_keys (id, secret_hash, name, plan, per_minute, per_day, role)
          VALUES (${newKeyId()}, ${hashSecret(secret)}, ${request.name ?? ""}, ${request.plan},
                  ${request.limits?.perMinute ?? null}, ${request.limits?.perDay ?? null}, ${
          request.role ?? "customer"
        })
          RETURNING id, name, plan, per_minute, per_day, role, created_at`)
        return { key: toApiKey(row!), secret }
      }, traced("ApiKeys.create"))

      const update = Effect.fnUntraced(function*(id: ApiKeyId, request: UpdateKeyRequest) {
        const existing = yield* find(id)
        if (Option.isNone(existing)) return Option.none<ApiKey>()
        const plan = request.plan ?? existing.value.plan
        const limits = request.limits ?? (plan === "enterprise" && existing.value.plan === "enterprise"
          ? existing.value.limits
          : undefined)
        yield* checkPlanLimits(plan, plan === "enterprise" ? limits : request.limits)
        const rows = yield* db.query<ApiKeyRow>(sql`
          UPDATE api_keys SET plan = ${plan}, per_minute = ${limits?.perMinute ?? null}, per_day = ${
          limits?.perDay ?? null
        },
            role = ${request.role ?? existing.value.role}
          WHERE id = ${id} AND revoked_at IS NULL
          RETURNING id, name, plan, per_minute, per_day, role, created_at`)
        forgetAll()
        yield* announceChange(id)
        return Option.map(Option.fromUndefinedOr(rows[0]), toApiKey)
      }, traced("ApiKeys.update"))

      const revoke = Effect.fnUntraced(function*(id: ApiKeyId) {
        const rows = yield* db.query(
          sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
        )
        forgetAll()
        yield* announceChange(id)
        return rows.length > 0
      }, traced("ApiKeys.revoke"))

      const list = db.query<ApiKeyRow>(
        sql`SELECT id, name, plan, per_minute, per_day, role, created_at FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id`
      ).pipe(Effect.map((rows) => rows.map(toApiKey)))

      return ApiKeys.of({ find, authenticate, create, list, update, revoke })
    })
  )
}
