import {
  Forbidden,
  NotFound,
  PetHasOpenOrder,
  type PetPatch,
  POSTGRES_INTEGER_MAX,
  PreconditionFailed
} from "@petstore/contract"
import { Context, Effect, Layer } from "effect"
import type { DatabaseError } from "../db/DatabaseError.ts"
import type { PetMissing, PetUnderOpenOrder, PetVersionStale } from "./PetRefusals.ts"
import { type PetPrecondition, Pets, type StoredPet } from "./Pets.ts"
import { traced } from "../observability/spans.ts"

/** A pet's `ETag`: its id and version, as a strong entity tag (RFC 9110). */
export const etagOf = ({ pet, version }: StoredPet) => `"${pet.id}.${version}"`

/**
 * `If-Match` as this pet's versions: `*` (or no header) is any version; each
 * strong tag of this pet names one; weak tags and other pets' tags name none
 * (RFC 9110 compares If-Match strongly), so a list of only those never matches.
 */
export const preconditionOf = (petId: number, ifMatch: string | undefined): PetPrecondition => {
  if (ifMatch === undefined || ifMatch.trim() === "*") return { _tag: "Any" }
  const versions = [...ifMatch.matchAll(/(W\/)?"([^"]*)"/g)].flatMap(([, weak, tag]) => {
    const match = weak === undefined ? /^([1-9][0-9]{0,15})\.([1-9][0-9]{0,15})$/.exec(tag!) : null
    // A version beyond the `integer` column's range names no version this pet ever had: 412, like any other.
    return match !== null && Number(match[1]) === petId && Number(match[2]) <= POSTGRES_INTEGER_MAX
      ? [Number(match[2])]
      : []
  })
  return { _tag: "Versions", versions }
}

/**
 * The contract's answer to `PetMissing`, wherever a request names a pet (reading, changing or
 * deleting it, ordering it): the one place its 404's message is written.
 */
export const answerPetMissing = {
  PetMissing: ({ petId }: PetMissing) => Effect.fail(new NotFound({ message: `No pet has id ${petId}` }))
}

/** The contract's answer to each refusal of `Pets`: the compiler checks every one is answered. */
const answerRefusals = {
  ...answerPetMissing,
  PetVersionStale: ({ petId }: PetVersionStale) =>
    Effect.fail(
      new PreconditionFailed({
        message: `Pet ${petId} has changed since the version If-Match names: read it again for its current ETag`
      })
    ),
  PetUnderOpenOrder: ({ petId }: PetUnderOpenOrder) =>
    Effect.fail(new PetHasOpenOrder({ message: `Pet ${petId} has an open order: cancel or deliver it first` }))
}

/**
 * Changing and deleting pets (beta): the `If-Match` precondition, and who may
 * delete. A pet's status is not changed here: only orders move it (`Orders`).
 */
export class PetChanges extends Context.Service<PetChanges, {
  readonly update: (
    petId: number,
    patch: PetPatch,
    ifMatch: string | undefined
  ) => Effect.Effect<StoredPet, NotFound | PreconditionFailed | DatabaseError>
  readonly remove: (
    petId: number,
    ifMatch: string | undefined,
    caller: { readonly role: "customer" | "staff" }
  ) => Effect.Effect<void, Forbidden | NotFound | PreconditionFailed | PetHasOpenOrder | DatabaseError>
}>()("@petstore/server/pets/PetChanges") {
  static readonly layer = Layer.effect(
    PetChanges,
    Effect.gen(function*() {
      const pets = yield* Pets
      return PetChanges.of({
        update: (petId, patch, ifMatch) =>
          pets.update(petId, patch, preconditionOf(petId, ifMatch)).pipe(
            Effect.catchTags({ PetMissing: answerRefusals.PetMissing, PetVersionStale: answerRefusals.PetVersionStale })
          ),
        remove: Effect.fnUntraced(function*(petId, ifMatch, caller) {
          if (caller.role !== "staff") return yield* new Forbidden({ message: "Deleting a pet needs a staff API key" })
          yield* pets.remove(petId, preconditionOf(petId, ifMatch)).pipe(Effect.catchTags(answerRefusals))
        }, traced("PetChanges.remove"))
      })
    })
  )
}
