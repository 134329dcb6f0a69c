import { IdempotencyKeyInFlight, IdempotencyKeyReused } from "@petstore/contract"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { embed, type Statement, sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"

/** What a request carrying an Idempotency-Key may do. */
export type Claim =
  /** First use (or the earlier one expired or died before creating anything): create, holding `token`. */
  | { readonly _tag: "Claimed"; readonly token: string }
  /** Done before with the same body: answer with what it created again (a pet, or an order). */
  | { readonly _tag: "Replay"; readonly id: number }
  /** Used before with another body. */
  | { readonly _tag: "Mismatch" }
  /** The first request with this key is still being processed. */
  | { readonly _tag: "InFlight" }

export interface ClaimScope {
  readonly apiKeyId: string
  readonly key: string
}

/** A claim this request took (`Claimed`), by the token that proves it still holds it. */
export interface HeldClaim extends ClaimScope {
  readonly token: string
}

/** How one kind of creation (a pet, an order) runs under an Idempotency-Key. */
export interface Creation<A, E> {
  /** The request's hash: the same key with another hash is refused. Hashes of different kinds never collide. */
  readonly requestHash: string
  /** What is created, as the refusal of a reused key names it: "pet", "order". */
  readonly noun: string
  /** Creates it and completes the held claim in one statement; none when the claim was lost to a takeover. */
  readonly complete: (claim: HeldClaim) => Effect.Effect<Option.Option<A>, E>
  /** What the earlier request with this key and body created; none while that is not visible yet. */
  readonly replay: (id: number) => Effect.Effect<Option.Option<A>, E>
}

/** The answer of a request with an Idempotency-Key; `replayed` when it is the stored answer to an earlier request. */
export interface CreatedOnce<A> {
  readonly created: A
  readonly replayed: boolean
}

/**
 * What `completeWith` did: created the row (`Created`, the row as its creation returned it), created nothing and
 * released the claim so that a retry tries again (`NotCreated`), or nothing, the claim having been taken over as
 * abandoned (`Lost`).
 */
export type Completion<Row> =
  | { readonly _tag: "Created"; readonly row: Row }
  | { readonly _tag: "NotCreated" }
  | { readonly _tag: "Lost" }

const inFlight = new IdempotencyKeyInFlight({
  message: "A request with this Idempotency-Key is still being processed; retry shortly"
})

/** Keys are kept for a day; a claim that created nothing in this time was abandoned (its process died). */
const KEPT = "24 hours"
const ABANDONED_AFTER = "60 seconds"

/**
 * The idempotency_keys table: all of its SQL is here.
 *
 * A creation under a claim is one statement with the claim's completion (`completeWith`), so that no crash between
 * two statements can leave a row its key does not know of (the claim, abandoned, would be taken over and a retry
 * would create the row again). What it creates is written by the module that owns that table (`Pets.ts`,
 * `Orders.ts`) and embedded here; what makes the statement correct is this table's claim protocol: it locks the
 * claim still held by this token and not yet completed, and records the created row on it, or releases it.
 */
export class IdempotencyKeys extends Context.Service<IdempotencyKeys, {
  readonly claim: (scope: ClaimScope, requestHash: string) => Effect.Effect<Claim, DatabaseError>
  /**
   * Creates once per Idempotency-Key: a retry with the same key and body gets
   * the original back instead of a second one, the same key with another body
   * is refused, and so is a retry while the first is still being processed.
   */
  readonly once: <A, E>(
    scope: ClaimScope,
    creation: Creation<A, E>
  ) => Effect.Effect<CreatedOnce<A>, E | IdempotencyKeyInFlight | IdempotencyKeyReused | DatabaseError>
  /**
   * Runs `creation` under the held claim and completes the claim with what it created, in one statement.
   * `creation` is the CTEs of the creating statement, written with `sql`: they read `claim_held` (one row while this
   * request still holds the claim, none once it was taken over) and end in a CTE `created` that returns the created
   * row with its `id`, or nothing. A claim that created nothing is released, so that a retry tries again: only
   * what was created is replayed. `kind` says which of the key's columns records it.
   */
  readonly completeWith: <Row extends { readonly id: number }>(
    claim: HeldClaim,
    kind: "pet" | "order",
    creation: Statement
  ) => Effect.Effect<Completion<Row>, DatabaseError>
}>()("@petstore/server/idempotency/IdempotencyKeys") {
  static readonly layer = Layer.effect(
    IdempotencyKeys,
    Effect.gen(function*() {
      const db = yield* Database

      // Expired keys are reclaimed on reuse anyway; this only keeps the table small.
      yield* db.query(sql`DELETE FROM idempotency_keys WHERE created_at < now() - ${KEPT}::interval`).pipe(
        Effect.ignore,
        Effect.repeat(Schedule.spaced("1 hour")),
        Effect.forkScoped
      )

      interface Row {
        readonly claimed: boolean | null
        readonly request_hash: string | null
        readonly done_id: number | null
      }

      const claim = Effect.fnUntraced(function*(scope: ClaimScope, requestHash: string) {
        const token = randomUUID()
        const [row] = yield* db.query<Row>(sql`
          WITH claimed AS (
            INSERT INTO idempotency_keys AS k (api_key_id, key, request_hash, claim_token)
            VALUES (${scope.apiKeyId}, ${scope.key}, ${requestHash}, ${token}::uuid)
            ON CONFLICT (api_key_id, key) DO UPDATE
              SET request_hash = EXCLUDED.request_hash, claim_token = EXCLUDED.claim_token, pet_id = NULL, order_id = NULL,
                  created_at = now()
              WHERE k.created_at < now() - ${KEPT}::interval
                 OR (k.pet_id IS NULL AND k.order_id IS NULL AND k.created_at < now() - ${ABANDONED_AFTER}::interval)
            RETURNING true AS claimed
          )
          SELECT (SELECT claimed FROM claimed) AS claimed, k.request_hash, COALESCE(k.pet_id, k.order_id) AS done_id
          FROM (SELECT 1) AS one
          LEFT JOIN idempotency_keys AS k ON k.api_key_id = ${scope.apiKeyId} AND k.key = ${scope.key}`)
        if (row?.claimed) return { _tag: "Claimed", token } as const
        // Not claimed and not yet visible: another request holds it at this very moment.
        if (row?.request_hash === null || row?.request_hash === undefined) return { _tag: "InFlight" } as const
        if (row.request_hash !== requestHash) return { _tag: "Mismatch" } as const
        return row.done_id === null
          ? { _tag: "InFlight" } as const
          : { _tag: "Replay", id: Number(row.done_id) } as const
      }, traced("IdempotencyKeys.claim"))

      const completeWith = Effect.fnUntraced(function*<Row extends { readonly id: number }>(
        claim: HeldClaim,
        kind: "pet" | "order",
        creation: Statement
      ) {
        const [row] = yield* db.query<{ readonly held: boolean } & { readonly [K in keyof Row]: Row[K] | null }>(sql`
          WITH claim_held AS (
            SELECT 1 FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid
              AND pet_id IS NULL AND order_id IS NULL
            FOR UPDATE
          ), ${embed(creation)}, completed AS (
            UPDATE idempotency_keys
            SET pet_id = CASE WHEN ${kind}::text = 'pet' THEN (SELECT id FROM created) END,
                order_id = CASE WHEN ${kind}::text = 'order' THEN (SELECT id FROM created) END
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND EXISTS (SELECT 1 FROM created)
          ), released AS (
            DELETE FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid
              AND EXISTS (SELECT 1 FROM claim_held) AND NOT EXISTS (SELECT 1 FROM created)
          )
          SELECT EXISTS (SELECT 1 FROM claim_held) AS held, created.*
          FROM (SELECT 1) AS one LEFT JOIN created ON true`)
        if (!row?.held) return { _tag: "Lost" } as const
        if (row.id === null) return { _tag: "NotCreated" } as const
        const { held: _, ...created } = row
        return { _tag: "Created", row: created as unknown as Row } as const
      }, traced("IdempotencyKeys.completeWith"))

      const once = <A, E>(scope: ClaimScope, creation: Creation<A, E>) =>
        Effect.gen(function*() {
          const claimed = yield* claim(scope, creation.requestHash)
          const found = (created: Option.Option<A>, replayed: boolean) =>
            Option.match(created, {
              onNone: () => Effect.fail(inFlight),
              onSome: (created): Effect.Effect<CreatedOnce<A>> => Effect.succeed({ created, replayed })
            })
          switch (claimed._tag) {
            case "Claimed":
              return yield* found(yield* creation.complete({ ...scope, token: claimed.token }), false)
            case "Replay":
              return yield* found(yield* creation.replay(claimed.id), true)
            case "Mismatch":
              return yield* new IdempotencyKeyReused({
                message:
                  `This Idempotency-Key was already used with a different body; use a new key for a new ${creation.noun}`
              })
            case "InFlight":
              return yield* inFlight
          }
        }).pipe(Effect.withSpan("IdempotencyKeys.once"))

      return IdempotencyKeys.of({ claim, once, completeWith })
    })
  )
}
