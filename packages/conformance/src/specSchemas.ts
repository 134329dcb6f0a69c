import { PetStatus } from "@petstore/contract"
import { Schema } from "effect"

/**
 * The spec's Pet (§2): the types it states and nothing more, so that a `spec`
 * check accepts every implementation the spec allows. The contract's Pet adds
 * this implementation's own bounds (ids from 1, names of 1–100 characters).
 */
export const SpecPet = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  categoryId: Schema.Int,
  status: PetStatus
})
export type SpecPet = typeof SpecPet.Type

/** The spec's Pets: a JSON array of Pet objects. */
export const SpecPets = Schema.Array(SpecPet)
