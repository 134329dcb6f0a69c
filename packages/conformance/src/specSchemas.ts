import { PetStatus } from "@petstore/contract"
import { Schema } from "effect"

/**
 * An integer of format int64, as the spec types ids: any sign, up to 2^63 in size, not only the safe integers of
 * JavaScript. Its JSON Schema is the spec's own words, `{type: integer, format: int64}`, without the safe-integer
 * bounds that `Schema.Int` would add: the value classes are derived from it (`valueClasses.ts`).
 */
export const Int64 = Schema.Finite.check(
  Schema.makeFilter((n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 63, {
    expected: "an integer of format int64",
    toJsonSchema: () => ({ type: "integer", format: "int64" })
  })
)

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

/** The spec's NewPet (§2): only types and the required fields, no bounds of this implementation; unknown fields are not refused. */
export const SpecNewPet = Schema.Struct({
  name: Schema.String,
  categoryId: Int64,
  status: Schema.optionalKey(PetStatus)
})

/** listPets' query parameters (§4.1): `limit` an integer from 1 to 100, `status` a PetStatus, both optional. */
export const SpecListPetsQuery = Schema.Struct({
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
  status: Schema.optionalKey(PetStatus)
})

/** getPet's path parameter (§4.3): `petId`, an integer of format int64. */
export const SpecGetPetPath = Schema.Struct({ petId: Int64 })
