import { IdempotencyKeyInFlight, IdempotencyKeyReused, type NewPet, type Order } from "@petstore/contract"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { sql } from "../db/sql.ts"
import { type OrderRow, toOrder } from "../orders/Orders.ts"
import { type StoredPet, toStoredPet, type VersionedPetRow } from "../pets/Pets.ts"
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

const inFlight = new IdempotencyKeyInFlight({
  message: "A request with this Idempotency-Key is still being processed; retry shortly"
})

/** Keys are kept for a day; a claim that created nothing in this time was abandoned (its process died). */
const KEPT = "24 hours"
const ABANDONED_AFTER = "60 seconds"

/**
 * The idempotency_keys table: all of its SQL is here, including the one
 * statement that also writes the pets table (`completeClaim`).
 *
 * That statement inserts the pet and records it on the key at once, so that no
 * crash between two statements can leave a pet its key does not know of (the
 * claim, abandoned, would be taken over and a retry would create the pet again).
 * It lives here rather than in `Pets` because what makes it correct is this
 * table's claim protocol: two of its three parts lock the claim still held by
 * this token and not yet completed, then complete it. Its pets part is one row
 * of the insert `Pets.create` makes, returning the row `Pets` reads (`PetRow`,
 * `toPet`).
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
   * Creates the pet the claim was taken for and completes the claim, in one
   * statement. None when the claim was lost (taken over as abandoned) and
   * nothing was created.
   */
  readonly completeClaim: (claim: HeldClaim, pet: NewPet) => Effect.Effect<Option.Option<StoredPet>, DatabaseError>
  /**
   * Places the order the claim was taken for and completes the claim, in one
   * statement, as `Orders.place` places one. When the pet is not available
   * (or gone) nothing is placed and the claim is released, so that a retry
   * tries again: only a placed order is replayed. `Lost` when the claim was
   * taken over as abandoned.
   */
  readonly completeOrderClaim: (
    claim: HeldClaim,
    petId: number
  ) => Effect.Effect<
    | { readonly _tag: "Placed"; readonly order: Order }
    | { readonly _tag: "NotPlaced" }
    | { readonly _tag: "Lost" },
    DatabaseError
  >
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

      const completeClaim = Effect.fnUntraced(function*(claim: HeldClaim, pet: NewPet) {
        const rows = yield* db.query<VersionedPetRow>(sql`
          WITH owned AS (
            SELECT 1 FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid AND pet_id IS NULL
            FOR UPDATE
          ), pet AS (
            INSERT INTO pets (name, category_id, status)
            SELECT ${pet.name}, ${pet.categoryId}, ${pet.status} FROM owned
            RETURNING id, name, category_id, status, version
          ), completed AS (
            UPDATE idempotency_keys SET pet_id = (SELECT id FROM pet)
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND EXISTS (SELECT 1 FROM pet)
          )
          SELECT * FROM pet`)
        return Option.map(Option.fromUndefinedOr(rows[0]), toStoredPet)
      }, traced("IdempotencyKeys.completeClaim"))

      const completeOrderClaim = Effect.fnUntraced(function*(claim: HeldClaim, petId: number) {
        const [row] = yield* db.query<
          { readonly owned: boolean } & { readonly [K in keyof OrderRow]: OrderRow[K] | null }
        >(sql`
          WITH owned AS (
            SELECT 1 FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid
              AND pet_id IS NULL AND order_id IS NULL
            FOR UPDATE
          ), pet AS (
            UPDATE pets SET status = 'pending', version = version + 1
            WHERE id = ${petId}::bigint AND status = 'available' AND EXISTS (SELECT 1 FROM owned)
            RETURNING id
          ), placed AS (
            INSERT INTO orders (pet_id, open_pet_id, api_key_id, status)
            SELECT id, id, ${claim.apiKeyId}, 'placed' FROM pet
            RETURNING id, pet_id, status, placed_at, updated_at
          ), completed AS (
            UPDATE idempotency_keys SET order_id = (SELECT id FROM placed)
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND EXISTS (SELECT 1 FROM placed)
          ), released AS (
            DELETE FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid
              AND EXISTS (SELECT 1 FROM owned) AND NOT EXISTS (SELECT 1 FROM placed)
          )
          SELECT EXISTS (SELECT 1 FROM owned) AS owned, placed.id, placed.pet_id, placed.status, placed.placed_at, placed.updated_at
          FROM (SELECT 1) AS one LEFT JOIN placed ON true`)
        if (!row?.owned) return { _tag: "Lost" } as const
        if (row.id === null) return { _tag: "NotPlaced" } as const
        return { _tag: "Placed", order: toOrder(row as OrderRow) } as const
      }, traced("IdempotencyKeys.completeOrderClaim"))

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

      return IdempotencyKeys.of({ claim, once, completeClaim, completeOrderClaim })
    })
  )
}
