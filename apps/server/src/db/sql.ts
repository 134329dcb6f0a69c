/**
 * Writing statements as postgres.js's README does: plain SQL in a tagged
 * template, each interpolation a bound parameter. Both drivers run the text as
 * it is, so a statement means the same on PostgreSQL and on PGlite.
 */

/** A SQL statement with `$n` placeholders, as `sql\`…\`` builds it. */
export interface Statement {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

/** Tagged template for plain SQL: every interpolation becomes a bound parameter, never text. */
export const sql = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement => ({
  text: strings.reduce((text, part, index) => `${text}$${index}${part}`),
  values
})

/**
 * A JavaScript array as a PostgreSQL array literal, to bind with an explicit
 * cast (`${arrayLiteral(ids)}::bigint[]`): the drivers infer array parameter
 * types differently, a literal string means the same to both. This is how a
 * batch of requests becomes one statement (`unnest` of the arrays).
 */
export const arrayLiteral = (values: ReadonlyArray<string | number | boolean | null>) =>
  `{${
    values.map((value) =>
      value === null ? "NULL" : typeof value === "string" ? `"${value.replace(/[\\"]/g, "\\$&")}"` : String(value)
    ).join(",")
  }}`
