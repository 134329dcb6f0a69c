import { Schema } from "effect"

/** An API key's identifiers, which the admin API, the middleware and the operations share. */
export const ApiKeyId = Schema.String.check(
  Schema.isPattern(/^key_[0-9a-z]{16}$/, { expected: "an API key id such as key_0123456789abcdef" })
)
export type ApiKeyId = typeof ApiKeyId.Type

/**
 * What a key may do with orders: a `customer` (the default, and every key
 * issued before roles existed) places, lists, reads and cancels its own
 * orders; `staff` reads, cancels and delivers any order, and deletes pets.
 */
export const KeyRole = Schema.Literals(["customer", "staff"]).annotate({ identifier: "KeyRole" })
export type KeyRole = typeof KeyRole.Type
