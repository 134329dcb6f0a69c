import { Schema, SchemaTransformation } from "effect"

/**
 * `Idempotency-Key` (IETF httpapi draft): a unique value, quoted or bare, that
 * makes a retried create return the original answer instead of a second pet.
 */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(idempotencyKeyAsSent(), { expected: "an Idempotency-Key of 1 to 255 characters" })
).annotate({
  // No example value: documentation pages put one into every code sample, and a sample run twice would
  // then be a replay (or, changed, a 422). Without one, curl samples leave the header out.
  description: "A new unique value per create, e.g. a UUID (`uuidgen`); quoted (\"…\") or bare, " +
    "1–255 characters inside the quotes"
}).pipe(
  Schema.decodeTo(
    Schema.String.check(
      Schema.isMinLength(1, { expected: "an Idempotency-Key of 1 to 255 characters" }),
      Schema.isMaxLength(255, { expected: "an Idempotency-Key of 1 to 255 characters" })
    ),
    SchemaTransformation.transform({
      decode: (value) => value.trim().replace(/^"(.*)"$/, "$1"),
      encode: (value) => `"${value}"`
    })
  )
)

/**
 * What the server accepts as an `Idempotency-Key` value, as a pattern the
 * OpenAPI document can carry: the value is trimmed (only tab, space and NBSP
 * can reach it: HTTP refuses other control characters in a header), then a
 * quoted value's quotes are dropped, and 1–255 characters must remain.
 */
function idempotencyKeyAsSent(): RegExp {
  const space = String.raw`\t \u00a0`
  const char = String.raw`\t\u0020-\u007e\u0080-\u00ff`
  const edge = String.raw`\u0021-\u007e\u0080-\u009f\u00a1-\u00ff`
  const edgeNotQuote = String.raw`\u0021\u0023-\u007e\u0080-\u009f\u00a1-\u00ff`
  const quoted = `"[${char}]{1,255}"`
  const bare = `[${edge}]|[${edgeNotQuote}][${char}]{0,253}[${edge}]|[${edge}][${char}]{0,253}[${edgeNotQuote}]`
  return new RegExp(`^[${space}]*(?:${quoted}|${bare})[${space}]*$`, "u")
}
