import { IdempotencyKeyInFlight, IdempotencyKeyReused, type NewPet } from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { IdempotencyKeys } from "../idempotency/IdempotencyKeys.ts"
import { Pets, type StoredPet } from "./Pets.ts"

/** The pet a create answers with; `replayed` when it is the stored answer to an earlier request with the same Idempotency-Key. */
export interface CreatedPet {
  readonly stored: StoredPet
  readonly replayed: boolean
}

/** Two creates are the same request when their decoded bodies are equal (key order and spacing do not matter). */
const requestHash = (pet: NewPet) =>
  createHash("sha256").update(JSON.stringify([pet.name, pet.categoryId, pet.status])).digest("hex")

const inFlight = new IdempotencyKeyInFlight({
  message: "A request with this Idempotency-Key is still being processed; retry shortly"
})

const reused = new IdempotencyKeyReused({
  message: "This Idempotency-Key was already used with a different body; use a new key for a new pet"
})

/**
 * Adding pets, once per Idempotency-Key: a retry with the same key and body
 * gets the original pet back instead of a second one, the same key with
 * another body is refused, and so is a retry while the first is still being
 * processed. Keys are scoped to the API key that sent them.
 */
export class PetCreation extends Context.Service<PetCreation, {
  readonly create: (
    pet: NewPet,
    options: { readonly apiKeyId: string; readonly idempotencyKey: string | undefined }
  ) => Effect.Effect<CreatedPet, IdempotencyKeyInFlight | IdempotencyKeyReused | DatabaseError>
}>()("@petstore/server/pets/PetCreation") {
  static readonly layer = Layer.effect(
    PetCreation,
    Effect.gen(function*() {
      const pets = yield* Pets
      const idempotencyKeys = yield* IdempotencyKeys

      /** A pet the claim's own insert or an earlier request created; none when another process holds the claim now. */
      const orInFlight = (pet: Option.Option<StoredPet>, replayed: boolean) =>
        Option.match(pet, { onNone: () => Effect.fail(inFlight), onSome: (stored) => Effect.succeed({ stored, replayed }) })

      const createOnce = Effect.fn("PetCreation.createOnce")(function*(pet: NewPet, apiKeyId: string, key: string) {
        const claim = yield* idempotencyKeys.claim({ apiKeyId, key }, requestHash(pet))
        switch (claim._tag) {
          case "Claimed":
            return yield* orInFlight(yield* idempotencyKeys.completeClaim({ apiKeyId, key, token: claim.token }, pet), false)
          case "Replay":
            return yield* orInFlight(yield* pets.get(claim.id), true)
          case "Mismatch":
            return yield* reused
          case "InFlight":
            return yield* inFlight
        }
      })

      return PetCreation.of({
        create: Effect.fn("PetCreation.create")(function*(pet, { apiKeyId, idempotencyKey }) {
          if (idempotencyKey === undefined) return { stored: yield* pets.create(pet), replayed: false }
          return yield* createOnce(pet, apiKeyId, idempotencyKey)
        })
      })
    })
  )
}
