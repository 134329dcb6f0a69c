import {
  type ApiKeyId,
  type AuditAction,
  type CreateKeyRequest,
  type KeyRole,
  type Plan,
  planQuotas,
  type QuotaLimits,
  type UpdateKeyRequest
} from "@petstore/contract"
import { Clock, Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { arrayLiteral, sql } from "../db/sql.ts"
import { isKeyShaped, newSecret } from "./keyFormat.ts"
import { type KeyExpiryRefused, type KeyLimitsRefused, KeyMissing } from "./KeyRefusals.ts"
import { checkExpiresAt, checkPlanLimits } from "./keyRequests.ts"
import { traced } from "../observability/spans.ts"

export interface ApiKey {
  readonly id: ApiKeyId
  readonly name: string
  readonly plan: Plan
  readonly limits: QuotaLimits
  readonly role: KeyRole
  readonly createdAt: Date
  readonly expiresAt: Date | null
  /** While a roll's overlap lasts: when the secret before the roll stops working. */
  readonly previousKeyExpiresAt: Date | null
  readonly lastUsedAt: Date | null
}

/** Who made an admin change, for the audit trail: the caller's address. */
export interface Actor {
  readonly clientAddress: string
}

/** The audit trail's caller for changes made without the admin API (tests, tools in the process). */
const systemActor: Actor = { clientAddress: "local" }

/**
 * How long a looked-up key is trusted without asking the database again.
 * Changes are announced to every process at once (LISTEN/NOTIFY); this bounds
 * the delay should an announcement be lost, e.g. while reconnecting.
 */
export const KEY_CACHE_TTL_MILLIS = 4_000
const KEYS_CHANGED_CHANNEL = "api_keys_changed"
const KEY_CACHE_MAX_ENTRIES = 10_000
/** Expired keys stay listable this long, then the sweep purges them (moves them to the revoked ones). */
export const EXPIRED_KEY_RETENTION_DAYS = 30
/** A key's last use is written by each process at most this often. */
export const LAST_USE_WRITE_MILLIS = 60_000

/**
 * The flush's one statement: every due key's last use, written together. Exported so that `pnpm bench` measures
 * what the server sends, not a copy.
 */
export const lastUseStatement = (due: ReadonlyArray<readonly [ApiKeyId, number]>) =>
  sql`
    UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, used.at)
    FROM unnest(${arrayLiteral(due.map(([id]) => id))}::text[],
                ${arrayLiteral(due.map(([, at]) => new Date(at).toISOString()))}::timestamptz[]) AS used (id, at)
    WHERE k.id = used.id`

const hashSecret = (secret: string) => createHash("sha256").update(secret).digest("hex")
const newKeyId = () => `key_${randomBytes(8).toString("hex")}` as ApiKeyId

interface ApiKeyRow {
  readonly id: ApiKeyId
  readonly name: string
  readonly plan: Plan
  readonly per_minute: number | null
  readonly per_day: number | null
  readonly role: KeyRole
  readonly created_at: Date | string
  readonly expires_at: Date | string | null
  readonly previous_secret_expires_at: Date | string | null
  readonly last_used_at: Date | string | null
}

const dateOrNull = (value: Date | string | null) => value === null ? null : new Date(value)

const toApiKey = (row: ApiKeyRow, now: number): ApiKey => {
  const previous = dateOrNull(row.previous_secret_expires_at)
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    limits: row.plan === "enterprise"
      ? { perMinute: row.per_minute!, perDay: row.per_day! }
      : planQuotas[row.plan],
    role: row.role,
    createdAt: new Date(row.created_at),
    expiresAt: dateOrNull(row.expires_at),
    previousKeyExpiresAt: previous !== null && previous.getTime() > now ? previous : null,
    lastUsedAt: dateOrNull(row.last_used_at)
  }
}

const isoOrNull = (date: Date | null) => date === null ? null : date.toISOString()

/** The api_keys table: issuing, looking up, rolling and revoking keys. All of its SQL is here. */
export class ApiKeys extends Context.Service<ApiKeys, {
  /** The key with this id, unless revoked or purged (an expired key is found: an operator may extend it). */
  readonly find: (id: ApiKeyId) => Effect.Effect<ApiKey, KeyMissing | DatabaseError>
  /** The live key a bearer secret belongs to, if any. */
  readonly authenticate: (secret: Redacted.Redacted<string>) => Effect.Effect<Option.Option<ApiKey>, DatabaseError>
  readonly create: (
    request: CreateKeyRequest,
    actor?: Actor
  ) => Effect.Effect<
    { readonly key: ApiKey; readonly secret: string },
    KeyExpiryRefused | KeyLimitsRefused | DatabaseError
  >
  readonly list: (state?: "live" | "expired") => Effect.Effect<ReadonlyArray<ApiKey>, DatabaseError>
  readonly update: (
    id: ApiKeyId,
    request: UpdateKeyRequest,
    actor?: Actor
  ) => Effect.Effect<ApiKey, KeyMissing | KeyExpiryRefused | KeyLimitsRefused | DatabaseError>
  /** A new secret for the key; the one it had keeps working for `overlapSeconds`, any older one stops now. */
  readonly roll: (
    id: ApiKeyId,
    overlapSeconds: number,
    actor?: Actor
  ) => Effect.Effect<{ readonly key: ApiKey; readonly secret: string }, KeyMissing | DatabaseError>
  /** Revokes a live key; one already revoked (or purged) is missing. */
  readonly revoke: (id: ApiKeyId, actor?: Actor) => Effect.Effect<void, KeyMissing | DatabaseError>
  /** Records an admin change made outside this table (an unban: the ban lives in the quota store). */
  readonly audit: (
    id: ApiKeyId,
    action: AuditAction,
    actor: Actor
  ) => Effect.Effect<void, DatabaseError>
  /** Writes this process's recorded uses (each key at most once a minute); returns how many keys it wrote. */
  readonly flushLastUse: Effect.Effect<number, DatabaseError>
  /** Purges keys expired longer than the retention; returns how many. */
  readonly sweep: Effect.Effect<number, DatabaseError>
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
      const nowIso = Effect.map(Clock.currentTimeMillis, (now) => [now, new Date(now).toISOString()] as const)

      /** Last uses not yet written, and when each key's was last written, by this process (see flushLastUse). */
      const usedAt = new Map<ApiKeyId, number>()
      const writtenAt = new Map<ApiKeyId, number>()
      /** A key as the database has it, with this process's last use of it that is not written yet. */
      const keyOf = (row: ApiKeyRow, now: number): ApiKey => {
        const key = toApiKey(row, now)
        const noted = usedAt.get(key.id)
        return noted !== undefined && noted > (key.lastUsedAt?.getTime() ?? 0)
          ? { ...key, lastUsedAt: new Date(noted) }
          : key
      }

      /** The row a statement on key `id` returned, as a key; no row: no live key has that id. */
      const liveKey = <A>(id: ApiKeyId, row: ApiKeyRow | undefined, now: number, answer: (key: ApiKey) => A) =>
        row === undefined ? Effect.fail(new KeyMissing({ keyId: id })) : Effect.succeed(answer(keyOf(row, now)))

      const find = Effect.fnUntraced(function*(id: ApiKeyId) {
        const now = yield* Clock.currentTimeMillis
        const [row] = yield* db.query<ApiKeyRow>(
          sql`SELECT id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at FROM api_keys WHERE id = ${id} AND revoked_at IS NULL`
        )
        return yield* liveKey(id, row, now, (key) => key)
      })

      const authenticate = Effect.fnUntraced(function*(secret: Redacted.Redacted<string>) {
        const value = Redacted.value(secret)
        if (!isKeyShaped(value)) return Option.none<ApiKey>()
        const hash = hashSecret(value)
        const now = yield* Clock.currentTimeMillis
        const cached = cache.get(hash)
        if (cached !== undefined && cached.expiresAt > now) {
          usedAt.set(cached.key.id, now)
          return Option.some(cached.key)
        }
        const readFrom = generation
        const at = new Date(now).toISOString()
        // The secret is the key's current one, or the one before its last roll while the overlap lasts.
        const rows = yield* db.query<ApiKeyRow & { readonly secret_expires_at: Date | string | null }>(sql`
          SELECT id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at, CASE WHEN secret_hash = ${hash} THEN NULL ELSE previous_secret_expires_at END AS secret_expires_at
          FROM api_keys
          WHERE (secret_hash = ${hash} OR (previous_secret_hash = ${hash} AND previous_secret_expires_at > ${at}::timestamptz))
            AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${at}::timestamptz)`)
        const row = rows[0]
        if (row === undefined) {
          cache.delete(hash)
          return Option.none<ApiKey>()
        }
        const key = keyOf(row, now)
        usedAt.set(key.id, now)
        if (readFrom === generation) {
          if (cache.size >= KEY_CACHE_MAX_ENTRIES) cache.clear()
          // Trusted no longer than the cache's lifetime, nor past the moment the key or this secret ends.
          const ends = [
            now + KEY_CACHE_TTL_MILLIS,
            key.expiresAt?.getTime(),
            dateOrNull(row.secret_expires_at)?.getTime()
          ]
          cache.set(hash, { key, expiresAt: Math.min(...ends.filter((end) => end !== undefined)) })
        }
        return Option.some(key)
      }, traced("ApiKeys.authenticate"))

      const create = Effect.fnUntraced(function*(request: CreateKeyRequest, actor: Actor = systemActor) {
        yield* checkPlanLimits(request.plan, request.limits)
        const [now] = yield* nowIso
        const expiresAt = request.expiresAt === undefined ? null : yield* checkExpiresAt(request.expiresAt, now)
        const secret = newSecret()
        const changes = {
          name: request.name ?? "",
          plan: request.plan,
          limits: request.limits ?? planQuotas[request.plan as Exclude<Plan, "enterprise">],
          role: request.role ?? "customer",
          expiresAt: isoOrNull(expiresAt)
        }
        const [row] = yield* db.query<ApiKeyRow>(sql`
          WITH created AS (
            INSERT INTO api_keys (id, secret_hash, name, plan, per_minute, per_day, role, expires_at)
            VALUES (${newKeyId()}, ${hashSecret(secret)}, ${changes.name}, ${request.plan},
                    ${request.limits?.perMinute ?? null}::integer, ${request.limits?.perDay ?? null}::integer,
                    ${changes.role}, ${isoOrNull(expiresAt)}::timestamptz)
            RETURNING id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at
          ), audited AS (
            INSERT INTO admin_audit (action, api_key_id, changes, client_address)
            SELECT 'key.created', id, ${JSON.stringify(changes)}::jsonb, ${actor.clientAddress} FROM created
          )
          SELECT * FROM created`)
        return { key: keyOf(row!, now), secret }
      }, traced("ApiKeys.create"))

      const update = Effect.fnUntraced(function*(id: ApiKeyId, request: UpdateKeyRequest, actor: Actor = systemActor) {
        const before = yield* find(id)
        const [now] = yield* nowIso
        const plan = request.plan ?? before.plan
        const limits = request.limits ?? (plan === "enterprise" && before.plan === "enterprise"
          ? before.limits
          : undefined)
        yield* checkPlanLimits(plan, plan === "enterprise" ? limits : request.limits)
        const expiresAt = request.expiresAt === undefined
          ? before.expiresAt
          : request.expiresAt === null
          ? null
          : yield* checkExpiresAt(request.expiresAt, now)
        const role = request.role ?? before.role
        const after = { plan, limits: limits ?? planQuotas[plan as Exclude<Plan, "enterprise">], role }
        const changes: Record<string, { from: unknown; to: unknown }> = {}
        for (const field of ["plan", "limits", "role"] as const) {
          if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) {
            changes[field] = { from: before[field], to: after[field] }
          }
        }
        if (isoOrNull(before.expiresAt) !== isoOrNull(expiresAt)) {
          changes.expiresAt = { from: isoOrNull(before.expiresAt), to: isoOrNull(expiresAt) }
        }
        const [row] = yield* db.query<ApiKeyRow>(sql`
          WITH changed AS (
            UPDATE api_keys SET plan = ${plan}, per_minute = ${limits?.perMinute ?? null}::integer,
              per_day = ${limits?.perDay ?? null}::integer, role = ${role}, expires_at = ${
          isoOrNull(expiresAt)
        }::timestamptz
            WHERE id = ${id} AND revoked_at IS NULL
            RETURNING id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at
          ), audited AS (
            INSERT INTO admin_audit (action, api_key_id, changes, client_address)
            SELECT 'key.updated', id, ${JSON.stringify(changes)}::jsonb, ${actor.clientAddress} FROM changed
          )
          SELECT * FROM changed`)
        forgetAll()
        yield* announceChange(id)
        // Revoked since it was read: missing, as it would have been a moment earlier.
        return yield* liveKey(id, row, now, (key) => key)
      }, traced("ApiKeys.update"))

      const roll = Effect.fnUntraced(function*(id: ApiKeyId, overlapSeconds: number, actor: Actor = systemActor) {
        const [now] = yield* nowIso
        const secret = newSecret()
        // With no overlap the secret before is dropped at once; either way an older one (a previous roll's) ends now.
        const previousEnds = overlapSeconds > 0 ? new Date(now + overlapSeconds * 1_000).toISOString() : null
        const changes = { overlapSeconds, previousKeyExpiresAt: previousEnds }
        const [row] = yield* db.query<ApiKeyRow>(sql`
          WITH rolled AS (
            UPDATE api_keys SET
              previous_secret_hash = CASE WHEN ${previousEnds}::timestamptz IS NULL THEN NULL ELSE secret_hash END,
              previous_secret_expires_at = ${previousEnds}::timestamptz,
              secret_hash = ${hashSecret(secret)}
            WHERE id = ${id} AND revoked_at IS NULL
            RETURNING id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at
          ), audited AS (
            INSERT INTO admin_audit (action, api_key_id, changes, client_address)
            SELECT 'key.rolled', id, ${JSON.stringify(changes)}::jsonb, ${actor.clientAddress} FROM rolled
          )
          SELECT * FROM rolled`)
        forgetAll()
        yield* announceChange(id)
        return yield* liveKey(id, row, now, (key) => ({ key, secret }))
      }, traced("ApiKeys.roll"))

      const revoke = Effect.fnUntraced(function*(id: ApiKeyId, actor: Actor = systemActor) {
        const rows = yield* db.query(sql`
          WITH revoked AS (
            UPDATE api_keys SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL RETURNING id
          ), audited AS (
            INSERT INTO admin_audit (action, api_key_id, changes, client_address)
            SELECT 'key.revoked', id, '{}'::jsonb, ${actor.clientAddress} FROM revoked
          )
          SELECT id FROM revoked`)
        forgetAll()
        yield* announceChange(id)
        if (rows.length === 0) return yield* new KeyMissing({ keyId: id })
      }, traced("ApiKeys.revoke"))

      const audit = (id: ApiKeyId, action: AuditAction, actor: Actor) =>
        Effect.asVoid(db.query(sql`
          INSERT INTO admin_audit (action, api_key_id, changes, client_address)
          VALUES (${action}, ${id}, '{}'::jsonb, ${actor.clientAddress})`))

      /**
       * Last use without a write per request: each use is noted in memory, and
       * the minute's flush writes the keys this process has not written for a
       * minute, all in one statement. So the column is behind by at most a
       * minute (the process's own views add its notes), and a busy key costs
       * each process one write a minute.
       */
      const flushLastUse = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const [id, at] of writtenAt) if (at <= now - LAST_USE_WRITE_MILLIS) writtenAt.delete(id)
        const due = [...usedAt].filter(([id]) => !writtenAt.has(id))
        if (due.length === 0) return 0
        for (const [id] of due) {
          usedAt.delete(id)
          writtenAt.set(id, now)
        }
        // Notes a failed write took are put back for the next flush, unless a newer use replaced them.
        const putBack = Effect.sync(() => {
          for (const [id, at] of due) {
            writtenAt.delete(id)
            if ((usedAt.get(id) ?? 0) < at) usedAt.set(id, at)
          }
        })
        yield* Effect.onError(
          db.query(lastUseStatement(due)),
          () => putBack
        )
        return due.length
      })

      const list = (state: "live" | "expired" = "live") =>
        Effect.gen(function*() {
          const [now, at] = yield* nowIso
          const rows = yield* db.query<ApiKeyRow>(
            state === "live"
              ? sql`SELECT id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at FROM api_keys WHERE revoked_at IS NULL
                      AND (expires_at IS NULL OR expires_at > ${at}::timestamptz) ORDER BY created_at, id`
              : sql`SELECT id, name, plan, per_minute, per_day, role, created_at, expires_at, previous_secret_expires_at, last_used_at FROM api_keys WHERE revoked_at IS NULL
                      AND expires_at <= ${at}::timestamptz ORDER BY expires_at, id`
          )
          return rows.map((row) => keyOf(row, now))
        })

      // Purged keys join the revoked ones: gone from every list, kept for the orders and events that name them.
      const sweep = Effect.gen(function*() {
        const [, at] = yield* nowIso
        const [row] = yield* db.query<{ readonly swept: number }>(sql`
          WITH swept AS (
            UPDATE api_keys SET revoked_at = now()
            WHERE revoked_at IS NULL
              AND expires_at < ${at}::timestamptz - ${`${EXPIRED_KEY_RETENTION_DAYS} days`}::interval
            RETURNING 1
          )
          SELECT count(*)::integer AS swept FROM swept`)
        return row?.swept ?? 0
      })

      // Every process does both; a failure (the database away) is tried again at the next round.
      yield* flushLastUse.pipe(
        Effect.ignore,
        Effect.repeat(Schedule.spaced(LAST_USE_WRITE_MILLIS)),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => Effect.ignore(flushLastUse))
      yield* sweep.pipe(Effect.ignore, Effect.repeat(Schedule.spaced("1 hour")), Effect.forkScoped)

      return ApiKeys.of({ find, authenticate, create, list, update, roll, revoke, audit, flushLastUse, sweep })
    })
  )
}
