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

/**
 * Part of a statement that another module writes, put into a statement with `embed` (e.g. the CTEs that create a row,
 * run by the module owning a claim on it): its text goes in as text, its values are bound in turn.
 */
export class Embedded {
  readonly statement: Statement
  constructor(statement: Statement) {
    this.statement = statement
  }
}

/** `sql\`WITH ${embed(part)} …\``: the part's text is spliced in and its placeholders renumbered. */
export const embed = (statement: Statement) => new Embedded(statement)

/**
 * Tagged template for plain SQL: every interpolation becomes a bound parameter, never text, but an `embed`ded
 * statement, written with this same tag.
 */
export const sql = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement => {
  if (!values.some((value) => value instanceof Embedded)) {
    return { text: strings.reduce((text, part, index) => `${text}$${index}${part}`), values }
  }
  const bound: Array<unknown> = []
  let text = strings[0]!
  values.forEach((value, index) => {
    if (value instanceof Embedded) {
      const offset = bound.length
      text += value.statement.text.replace(/\$(\d+)/g, (_, position: string) => `$${Number(position) + offset}`)
      bound.push(...value.statement.values)
    } else {
      bound.push(value)
      text += `$${bound.length}`
    }
    text += strings[index + 1]
  })
  return { text, values: bound }
}

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
