import { Effect, Schema, SchemaTransformation } from "effect"

/**
 * A positive integer written in plain decimal digits, as it appears in a path
 * or a query string. Spellings that JavaScript would also accept as numbers
 * (`1e1`, `5.0`, `0x10`, ` 5`) are refused, so a value has one spelling only.
 */
export const DecimalId = Schema.String.check(
  Schema.isPattern(/^[1-9][0-9]{0,15}$/, { expected: "a positive integer in decimal digits" })
).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.numberFromString))

export const PetId = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
  description: "Unique identifier, assigned by the service on creation (int64 on the wire, safe integer range)",
  format: "int64"
})
export type PetId = typeof PetId.Type

export const PetStatus = Schema.Literals(["available", "pending", "sold"]).annotate({
  identifier: "PetStatus",
  description: "Availability status"
})
export type PetStatus = typeof PetStatus.Type

export const PetName = Schema.Trim.check(
  Schema.isMinLength(1, { expected: "a name of at least 1 character after trimming" }),
  Schema.isMaxLength(100, { expected: "a name of at most 100 characters after trimming" }),
  // PostgreSQL text cannot hold NUL; a name with one is the client's mistake, not an outage.
  Schema.isPattern(/^[^\u0000]*$/, { expected: "a name without NUL characters" })
).annotate({ description: "The animal's name, 1–100 characters after trimming" })

export const CategoryId = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({
  description: "Identifier of the category the animal belongs to (a positive safe integer)",
  format: "int64"
})

/**
 * What a client sends to create a pet: a plain object. `status` may be left out
 * (the server stores `available`); the server refuses unknown fields.
 */
export const NewPet = Schema.Struct({
  name: PetName,
  categoryId: CategoryId,
  status: PetStatus.pipe(Schema.withDecodingDefaultKey(Effect.succeed("available" as const)))
}).annotate({ identifier: "NewPet" })
export type NewPet = typeof NewPet.Type

export const Pet = Schema.Struct({
  id: PetId,
  name: Schema.String,
  categoryId: CategoryId,
  status: PetStatus
}).annotate({ identifier: "Pet" })
export type Pet = typeof Pet.Type

export const Pets = Schema.Array(Pet).annotate({ identifier: "Pets", description: "A page of pets, in ascending id order" })

