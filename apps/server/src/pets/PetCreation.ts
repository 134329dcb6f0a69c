import type { IdempotencyKeyInFlight, IdempotencyKeyReused, NewPet } from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { IdempotencyKeys } from "../idempotency/IdempotencyKeys.ts"
import { createUnderClaim, Pets, type StoredPet, toStoredPet, type VersionedPetRow } from "./Pets.ts"
import { traced } from "../observability/spans.ts"

/** The pet a create answers with; `replayed` when it is the stored answer to an earlier request with the same Idempotency-Key. */
export interface CreatedPet {
  readonly stored: StoredPet
  readonly replayed: boolean
}

/** Two creates are the same request when their decoded bodies are equal (key order and spacing do not matter). */
const requestHash = (pet: NewPet) =>
  createHash("sha256").update(JSON.stringify([pet.name, pet.categoryId, pet.status])).digest("hex")

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

      return PetCreation.of({
        create: Effect.fnUntraced(function*(pet, { apiKeyId, idempotencyKey }) {
          if (idempotencyKey === undefined) return { stored: yield* pets.create(pet), replayed: false }
          const { created, replayed } = yield* idempotencyKeys.once({ apiKeyId, key: idempotencyKey }, {
            requestHash: requestHash(pet),
            noun: "pet",
            complete: (claim) =>
              idempotencyKeys.completeWith<VersionedPetRow>(claim, "pet", createUnderClaim(pet)).pipe(
                Effect.map((completion) =>
                  completion._tag === "Created" ? Option.some(toStoredPet(completion.row)) : Option.none()
                )
              ),
            // None: the pet the key's claim names is not visible yet (or deleted since); `once` answers that as in flight.
            replay: (petId) =>
              pets.get(petId).pipe(
                Effect.map(Option.some),
                Effect.catchTag("PetMissing", () => Effect.succeedNone)
              )
          })
          return { stored: created, replayed }
        }, traced("PetCreation.create"))
      })
    })
  )
}
