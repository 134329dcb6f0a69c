import { Effect, Schema, SchemaTransformation } from "effect"
import { displayName } from "./Names.ts"

/**
 * A positive safe integer, `int64` on the wire. Built from `Number` with the
 * format on the base, so the generated JSON Schema is one flat object
 * (`{ type: integer, format: int64, minimum: 1, maximum: 2^53 − 1 }`):
 * `Schema.Int.check(…).annotate({ format })` would leave Int's own bounds
 * (±2^53 − 1) at the top and move the real minimum into an `allOf`, which
 * documentation tools and example generators then ignore.
 */
export const PositiveSafeInt = Schema.Number.annotate({ format: "int64" }).check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { expected: "a positive safe integer" })
)

/**
 * A positive integer written in plain decimal digits, as it appears in a path
 * or a query string. Spellings that JavaScript would also accept as numbers
 * (`1e1`, `5.0`, `0x10`, ` 5`, `05`) are refused, so a value has one spelling only.
 */
export const DecimalId = Schema.String.check(
  Schema.isPattern(/^[1-9][0-9]{0,15}$/u, { expected: "a positive integer in decimal digits" })
).pipe(Schema.decodeTo(
  // Sixteen digits reach past 2^53 − 1, where numbers lose precision: an id names one row or is refused.
  Schema.Int.check(
    Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, { expected: "a positive safe integer" })
  ),
  SchemaTransformation.numberFromString
))

/** How `DecimalId` values are spelled, for the parameters' descriptions in the OpenAPI document. */
export const DECIMAL_SPELLING = "Plain decimal digits: no sign, leading zero, fraction, exponent or spaces"

export const PetId = PositiveSafeInt.annotate({
  description:
    "Unique identifier, assigned by the service on creation (int64 on the wire, within the safe integer range 1 to 2^53 − 1)",
  examples: [1]
})
export type PetId = typeof PetId.Type

export const PetStatus = Schema.Literals(["available", "pending", "sold"]).annotate({
  identifier: "PetStatus",
  description: "Availability status"
})
export type PetStatus = typeof PetStatus.Type

/** A pet's name: docs/security.md, "What a name may hold" (Names.ts). */
export const PetName = displayName(100, "The animal's name.", ["Rex"])

export const CategoryId = PositiveSafeInt.annotate({
  description:
    "Identifier of the category the animal belongs to (int64 on the wire, within the safe integer range 1 to 2^53 − 1)",
  examples: [1]
})

/**
 * What a client sends to create a pet: a plain object. `status` may be left out
 * (the server stores `available`); the server refuses unknown fields.
 */
export const NewPet = Schema.Struct({
  name: PetName,
  categoryId: CategoryId,
  status: PetStatus.pipe(Schema.withDecodingDefaultKey(Effect.succeed("available" as const))).annotateKey({
    default: "available"
  })
}).annotate({
  identifier: "NewPet",
  description: "A pet to add. `status` may be left out: it defaults to `available`."
})
export type NewPet = typeof NewPet.Type

export const Pet = Schema.Struct({
  id: PetId,
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)).annotate({
    description: "The animal's name as stored: trimmed, 1–100 characters",
    examples: ["Rex"]
  }),
  categoryId: CategoryId,
  status: PetStatus
}).annotate({ identifier: "Pet" })
export type Pet = typeof Pet.Type

export const Pets = Schema.Array(Pet).annotate({
  identifier: "Pets",
  description: "A page of pets, in ascending id order"
})

/**
 * What `PATCH /pets/{petId}` may change: `name` and `categoryId`, each checked
 * as on create. Anything else is refused, `status` included: a pet's status
 * changes only through its orders.
 */
export const PetPatch = Schema.Struct({
  name: Schema.optionalKey(PetName),
  categoryId: Schema.optionalKey(CategoryId)
}).annotate({
  identifier: "PetPatch",
  description:
    "The fields to change; those left out keep their value. `status` is not one of them: it changes through orders.",
  messageUnexpectedKey: "Unknown field: only name and categoryId can be changed; status changes only through orders " +
    "(place, cancel or deliver an order)"
})
export type PetPatch = typeof PetPatch.Type

/**
 * `If-Match` (RFC 9110 §13.1.1): `*`, or a list of entity tags as `ETag`
 * gives them. Compared strongly: a weak tag (`W/"…"`) never matches, nor does
 * anything that is not one of the pet's current tags, so a value that names no
 * current version, however it is spelled, is 412, never 400.
 */
export const IfMatch = Schema.String.check(
  // What HTTP lets a header carry (Node refuses control characters before any route, README "Errors").
  Schema.isPattern(/^[\t\u0020-\u007e\u0080-\u00ff]*$/u, { expected: "a header value" })
).annotate({
  description: "The `ETag` of the pet as last read: the change is made only if the pet is still that version, " +
    "else 412. `*` matches any current version.",
  examples: ["\"1.1\""]
})
