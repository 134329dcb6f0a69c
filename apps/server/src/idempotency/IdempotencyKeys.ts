import type { NewPet, Pet } from "@petstore/contract"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { sql } from "../db/sql.ts"
import { type PetRow, toPet } from "../pets/Pets.ts"

/** What a request carrying an Idempotency-Key may do. */
export type Claim =
  /** First use (or the earlier one expired or died before creating anything): create, holding `token`. */
  | { readonly _tag: "Claimed"; readonly token: string }
  /** Done before with the same body: answer with that pet again. */
  | { readonly _tag: "Replay"; readonly petId: number }
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
   * Creates the pet the claim was taken for and completes the claim, in one
   * statement. None when the claim was lost (taken over as abandoned) and
   * nothing was created.
   */
  readonly completeClaim: (claim: HeldClaim, pet: NewPet) => Effect.Effect<Option.Option<Pet>, DatabaseError>
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
        readonly pet_id: number | null
      }

      const claim = Effect.fn("IdempotencyKeys.claim")(function*(scope: ClaimScope, requestHash: string) {
        const token = randomUUID()
        const [row] = yield* db.query<Row>(sql`
          WITH claimed AS (
            INSERT INTO idempotency_keys AS k (api_key_id, key, request_hash, claim_token)
            VALUES (${scope.apiKeyId}, ${scope.key}, ${requestHash}, ${token}::uuid)
            ON CONFLICT (api_key_id, key) DO UPDATE
              SET request_hash = EXCLUDED.request_hash, claim_token = EXCLUDED.claim_token, pet_id = NULL, created_at = now()
              WHERE k.created_at < now() - ${KEPT}::interval
                 OR (k.pet_id IS NULL AND k.created_at < now() - ${ABANDONED_AFTER}::interval)
            RETURNING true AS claimed
          )
          SELECT (SELECT claimed FROM claimed) AS claimed, k.request_hash, k.pet_id
          FROM (SELECT 1) AS one
          LEFT JOIN idempotency_keys AS k ON k.api_key_id = ${scope.apiKeyId} AND k.key = ${scope.key}`)
        if (row?.claimed) return { _tag: "Claimed", token } as const
        // Not claimed and not yet visible: another request holds it at this very moment.
        if (row?.request_hash === null || row?.request_hash === undefined) return { _tag: "InFlight" } as const
        if (row.request_hash !== requestHash) return { _tag: "Mismatch" } as const
        return row.pet_id === null ? { _tag: "InFlight" } as const : { _tag: "Replay", petId: row.pet_id } as const
      })

      const completeClaim = Effect.fn("IdempotencyKeys.completeClaim")(function*(claim: HeldClaim, pet: NewPet) {
        const rows = yield* db.query<PetRow>(sql`
          WITH owned AS (
            SELECT 1 FROM idempotency_keys
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND claim_token = ${claim.token}::uuid AND pet_id IS NULL
            FOR UPDATE
          ), pet AS (
            INSERT INTO pets (name, category_id, status)
            SELECT ${pet.name}, ${pet.categoryId}, ${pet.status} FROM owned
            RETURNING id, name, category_id, status
          ), completed AS (
            UPDATE idempotency_keys SET pet_id = (SELECT id FROM pet)
            WHERE api_key_id = ${claim.apiKeyId} AND key = ${claim.key} AND EXISTS (SELECT 1 FROM pet)
          )
          SELECT * FROM pet`)
        return Option.map(Option.fromUndefinedOr(rows[0]), toPet)
      })

      return IdempotencyKeys.of({ claim, completeClaim })
    })
  )
}
