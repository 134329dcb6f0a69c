import { Schema, SchemaTransformation } from "effect"

/**
 * What a name may hold (docs/security.md, "What a name may hold"), for pets' names and API keys' names alike.
 *
 * A name is shown to people: in lists, in receipts, in an operator's terminal. So it may not hold what
 * changes how the text around it is shown or read while being invisible itself:
 * - control characters (Unicode category Cc: NUL, tabs and line breaks inside a name, escape sequences),
 * - format characters (Cf: zero-width spaces and joiners, the bidirectional overrides such as U+202E
 *   that display `gepj.exe` as `exe.jpeg`, soft hyphens),
 * - lone surrogates (Cs), line and paragraph separators (Zl, Zp).
 * Whitespace at either end is trimmed (what `String.prototype.trim` removes), and what remains is
 * normalised to NFC, so that a name has one spelling: `é` sent decomposed is stored composed. A name must
 * then show at least one visible character: one of only fillers (U+3164, U+2800, …) is refused too.
 */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u

/** Characters that show nothing: whitespace, default-ignorable code points (fillers among them), the blank Braille pattern. */
const INVISIBLE = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]*$/u

/** What `String.prototype.trim` removes: ECMAScript's WhiteSpace and LineTerminator, spelled out so every regex dialect reads them alike. */
export const TRIMMED_WHITESPACE = String
  .raw`\t\n\u000b\u000c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff`

const hex = (code: number) => `\\u${code.toString(16).padStart(4, "0")}`

/**
 * The forbidden characters of the Basic Multilingual Plane as a class body of `\uXXXX` ranges, which
 * every regex dialect reads alike (JSON Schema validators, Python's for Schemathesis); `\p{…}` is not
 * portable. The few forbidden characters beyond the BMP (tag characters, some format controls) are
 * refused by the server all the same; the description says so.
 */
const FORBIDDEN_IN_BMP = (() => {
  const ranges: Array<string> = []
  let start = -1
  for (let code = 0; code <= 0x10000; code++) {
    const forbidden = code < 0x10000 && FORBIDDEN.test(String.fromCharCode(code))
    if (forbidden && start < 0) start = code
    if (!forbidden && start >= 0) {
      ranges.push(start === code - 1 ? hex(start) : `${hex(start)}-${hex(code - 1)}`)
      start = -1
    }
  }
  return ranges.join("")
})()

/**
 * A name as sent, for the OpenAPI document: something other than whitespace, at most `maxLength`
 * characters from its first to its last non-whitespace character, and no forbidden character of the
 * BMP between them (whitespace of those categories, a tab or a line break, is trimmed at either end).
 */
const asSent = (maxLength: number) =>
  new RegExp(
    `^[${TRIMMED_WHITESPACE}]*[^${TRIMMED_WHITESPACE}${FORBIDDEN_IN_BMP}](?:[^${FORBIDDEN_IN_BMP}]{0,${
      maxLength - 2
    }}[^${TRIMMED_WHITESPACE}${FORBIDDEN_IN_BMP}])?[${TRIMMED_WHITESPACE}]*$`,
    "u"
  )

/** What the server holds to after trimming and normalising: the checks of the decoded name. */
const nameRules = (maxLength: number) =>
  [
    Schema.makeFilter((name: string) =>
      FORBIDDEN.test(name)
        ? "a name without control or format characters (Unicode Cc, Cf), lone surrogates or line and paragraph separators"
        : undefined
    ),
    Schema.makeFilter((name: string) =>
      INVISIBLE.test(name) ? "a name with at least one visible character" : undefined
    ),
    Schema.makeFilter((name: string) =>
      name === name.normalize("NFC") ? undefined : "a name in Unicode normalisation form C"
    ),
    Schema.isMaxLength(maxLength, {
      expected: `a name of at most ${maxLength} characters (UTF-16 code units) after trimming`
    })
  ] as const

/** Trims, then normalises to NFC; a stored name is sent back as it is. */
const trimmedNfc = SchemaTransformation.transform<string, string>({
  decode: (name) => name.trim().normalize("NFC"),
  encode: (name) => name
})

/**
 * A name of 1 to `maxLength` characters under the rules above. JSON Schema counts characters as code
 * points, the server counts UTF-16 code units after trimming and NFC: a name with many characters outside
 * the BMP (emoji) can match the pattern and still be refused; the description says it in words.
 */
export const displayName = (maxLength: number, description: string, examples: ReadonlyArray<string>) =>
  Schema.String.check(
    Schema.isPattern(asSent(maxLength), {
      expected: `a name of 1 to ${maxLength} characters after trimming, without control or format characters`
    })
  ).annotate({
    description:
      `${description} Leading and trailing whitespace is trimmed and the rest normalised to Unicode NFC; what remains ` +
      `must be 1–${maxLength} characters (UTF-16 code units: a character outside the Basic Multilingual Plane, such as an emoji, ` +
      "counts as 2), show at least one visible character, and hold no control or format character (Unicode categories Cc " +
      "and Cf: NUL, tabs and line breaks, zero-width characters, bidirectional overrides), lone surrogate, or line or paragraph separator.",
    examples: [...examples]
  }).pipe(Schema.decodeTo(Schema.String.check(...nameRules(maxLength)), trimmedNfc))
