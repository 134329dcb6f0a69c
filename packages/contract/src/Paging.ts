import { Schema } from "effect"
import { describeParameters } from "./OpenApiDocument.ts"
import { DECIMAL_SPELLING, DecimalId } from "./Pet.ts"

/** Keyset pages of a list: the `limit` and `cursor` of its query, as decoded and as the OpenAPI document describes them. */
export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

export const PageSize = DecimalId.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { expected: `an integer from 1 to ${MAX_PAGE_SIZE}` })
).annotate({ default: DEFAULT_PAGE_SIZE })

/**
 * The query of a keyset-paged list of `noun`, filtered by `status`. `limit` is
 * optional on both sides: a decoding default would make it required for the
 * typed client, whose input is the decoded side. The server reads a missing
 * `limit` as `DEFAULT_PAGE_SIZE`.
 */
export const pageQuery = <S extends Schema.Top>(noun: string, status: S) =>
  Schema.Struct({
    limit: Schema.optionalKey(PageSize.annotate({
      description: `Maximum number of ${noun} returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`
    })),
    status: Schema.optionalKey(status),
    cursor: Schema.optionalKey(Schema.String.annotate({
      description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
    }))
  })

/** `status` filters; `limit` and `cursor` page. Described by value in the OpenAPI document, where Effect would show strings. */
export const pageParameters = (noun: string) =>
  describeParameters({
    limit: {
      value: Schema.toType(PageSize),
      description:
        `Maximum number of ${noun} returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}). ${DECIMAL_SPELLING}.`
    },
    cursor: {
      value: Schema.String.check(Schema.isPattern(cursorAsIssued())),
      description: "Where the page starts: copy it from the previous page's `Link: <…>; rel=\"next\"` URL. " +
        "Leave it out for the first page. Treat it as opaque: the pattern shows the cursors this version issues " +
        "(ids up to 15 digits), so that schema-driven tools can make valid ones; any other value is 400.",
      offByDefault: { summary: "A cursor from a Link header (leave it out for the first page)", value: "YWZ0ZXI6MjA" }
    }
  })

/**
 * The cursors this version issues, as a pattern: base64url, without padding,
 * of `after:<id>` for an id of 1 to 15 decimal digits (the server's
 * `encodeCursor`). "after:" is 6 bytes, so it encodes alone to `YWZ0ZXI6`, and
 * in each following group of three digit bytes every base64 character depends
 * on one digit only, so the id's digits map to characters one group at a time.
 */
function cursorAsIssued(): RegExp {
  const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
  const digits = (from: number) => Array.from({ length: 10 - from }, (_, i) => 0x30 + from + i)
  const anyOf = (texts: Array<string>) =>
    texts.every((text) => text.length === 1) ? `[${texts.join("")}]` : `(?:${[...new Set(texts)].join("|")})`
  /** A digit that starts a group: its two characters, the second with the next byte's high bits (another digit: 0x3_, or none). */
  const lead = (from: number, followed: boolean) =>
    anyOf(digits(from).map((b) => B64URL[b >> 2]! + B64URL[((b & 3) << 4) | (followed ? 0x3 : 0)]!))
  /** The second digit of a group: its character (the third byte's top bits are 0 for a digit or none). */
  const middle = anyOf(digits(0).map((b) => B64URL[(b & 0xf) << 2]!))
  /** The third digit of a group. */
  const last = anyOf(digits(0).map((b) => B64URL[b & 0x3f]!))
  const group = (from: number) => `${lead(from, true)}${middle}${last}`
  const tail = (from: number) => `${lead(from, false)}|${lead(from, true)}${middle}`
  return new RegExp(
    `^YWZ0ZXI6(?:${group(1)}(?:(?:${group(0)}){0,3}(?:${tail(0)})?|(?:${group(0)}){4})|${tail(1)})$`,
    "u"
  )
}
