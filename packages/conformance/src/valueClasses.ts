import { Schema } from "effect"

/**
 * Every class of invalid value of a request's fields, derived from a Schema's JSON Schema (draft 2020-12, as
 * `Schema.toJsonSchemaDocument` writes it): its fields, their types (string, integer, enumeration), format,
 * bounds, lengths, pattern, which are required, and whether unknown fields are refused. A field added to the
 * schema gets its classes, and so its checks, with no list to update.
 */

/** Where the fields travel: a JSON body (values are JSON texts), the query string or the path (values are texts). */
export type Location = "body" | "query" | "path"

/** A request's fields as sent: for a body, each value's JSON text (so that 2^63 and `75e-1` go out as written). */
export type Fields = ReadonlyArray<readonly [name: string, value: string]>

/**
 * How the class stands with the schema: `invalid`, a value the schema rules out; `int64-inexact`, an integer of
 * format int64 beyond 2^53, which the type allows but a JavaScript number cannot hold exactly.
 */
export type Standing = "invalid" | "int64-inexact"

export interface ValueClass {
  /** The field, or `body` for a class of the whole object (fields missing together, an unknown field). */
  readonly field: string
  /** The class, e.g. `null`, `fraction`, `other-case`: the last part of its check id. */
  readonly name: string
  /** What the class is, in words, for the check's title: `categoryId is a fraction`. */
  readonly description: string
  readonly standing: Standing
  /** The requests of the class: the valid base with one change each. */
  readonly requests: ReadonlyArray<Fields>
}

interface Node {
  readonly type?: string | ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly format?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly properties?: Readonly<Record<string, Node>>
  readonly required?: ReadonlyArray<string>
  readonly allOf?: ReadonlyArray<Node>
  readonly $ref?: string
}

const INT64_MAX = 2n ** 63n - 1n
const BEYOND_INT64 = ["9223372036854775808", "-9223372036854775809"] as const
/** 2^53 + 1: an int64, the first integer a JavaScript number rounds (to 2^53). */
const BEYOND_SAFE = "9007199254740993"

/** A node with its `$ref`s followed and its `allOf` merged in. */
const resolve = (node: Node, definitions: Readonly<Record<string, Node>>): Node => {
  const referenced = node.$ref === undefined
    ? {}
    : resolve(definitions[node.$ref.replace(/^#\/\$defs\//, "")] ?? {}, definitions)
  const merged = (node.allOf ?? []).reduce<Node>((all, part) => ({ ...all, ...resolve(part, definitions) }), referenced)
  const { $ref: _ref, allOf: _allOf, ...own } = node
  // `{type: number, allOf: [{type: integer, …}]}` is an integer: the narrower type of the two.
  const type = merged.type === "integer" && own.type === "number" ? "integer" : own.type ?? merged.type
  return { ...merged, ...own, ...(type === undefined ? {} : { type }) }
}

const objects = new WeakMap<
  Schema.Top,
  { readonly properties: Readonly<Record<string, Node>>; readonly required: ReadonlyArray<string> }
>()

/** The object a document describes: its fields, resolved, which of them are required. */
export const objectOf = (schema: Schema.Top) => {
  const known = objects.get(schema)
  if (known !== undefined) return known
  const object = describeObject(schema)
  objects.set(schema, object)
  return object
}

const describeObject = (schema: Schema.Top) => {
  const document = Schema.toJsonSchemaDocument(schema as never)
  const definitions = (document.definitions ?? {}) as Record<string, Node>
  const root = resolve(document.schema as Node, definitions)
  const properties = Object.fromEntries(
    Object.entries(root.properties ?? {}).map(([name, node]) => [name, resolve(node, definitions)])
  )
  return { properties, required: root.required ?? [] }
}

type Kind = "enum" | "integer" | "string"

const kindOf = (node: Node): Kind | undefined =>
  node.enum !== undefined && node.enum.every((value) => typeof value === "string")
    ? "enum"
    : node.type === "integer"
    ? "integer"
    : node.type === "string"
    ? "string"
    : undefined

const refusesText = (node: Node, text: string) =>
  (node.minLength !== undefined && [...text].length < node.minLength) ||
  (node.maxLength !== undefined && text.length > node.maxLength) ||
  (node.pattern !== undefined && !new RegExp(node.pattern, "u").test(text)) ||
  (node.enum !== undefined && !node.enum.includes(text))

/** Does an integer written as `text` lie outside the node's bounds (and int64's, for format int64)? */
const outOfBounds = (node: Node, text: string) => {
  const value = BigInt(text)
  return (node.minimum !== undefined && value < BigInt(Math.ceil(node.minimum))) ||
    (node.maximum !== undefined && value > BigInt(Math.floor(node.maximum))) ||
    (node.format === "int64" && (value > INT64_MAX || value < -INT64_MAX - 1n))
}

const json = JSON.stringify

interface Candidate {
  readonly name: string
  readonly description: string
  readonly values: ReadonlyArray<string>
  readonly standing?: Standing
}

/**
 * The classes of one field, each with the values that stand for it (as JSON texts in a body, as texts in a
 * query or path). `base` is a valid value of the field, as its location spells it.
 */
const fieldCandidates = (field: string, node: Node, location: Location, base: string): ReadonlyArray<Candidate> => {
  const kind = kindOf(node)
  if (kind === undefined) return []
  const inBody = location === "body"
  const candidates: Array<Candidate> = []
  const add = (name: string, description: string, values: ReadonlyArray<string>, standing?: Standing) => {
    if (values.length > 0) {
      candidates.push({ name, description, values, ...(standing === undefined ? {} : { standing }) })
    }
  }
  // Each JSON type the field is not; in a query or a path, the texts a client would send for them.
  const jsonType = kind === "integer" ? "number" : "string"
  if (inBody) {
    if (jsonType !== "string") {
      add("numeric-string", `${field} is its number written as a string`, [json(base)])
      add("string", `${field} is a string`, [json("abc")])
    }
    if (jsonType !== "number") add("number", `${field} is a number`, [kind === "enum" ? "1" : "42"])
    add("boolean", `${field} is a boolean`, ["true"])
    add("null", `${field} is null`, ["null"])
    add("array", `${field} is an array holding a valid value`, [`[${base}]`])
    add("object", `${field} is an object holding a valid value`, [`{"value":${base}}`])
  } else if (kind === "integer") {
    add("not-a-number", `${field} is not a number`, ["abc", "true"])
    // An empty path segment is another path (`/pets/`), not this parameter.
    if (location === "query") add("empty", `${field} is empty`, [""])
  }

  if (kind === "enum") {
    const literals = node.enum as ReadonlyArray<string>
    const spell = (values: ReadonlyArray<string>) =>
      [...new Set(values)].filter((value) => !literals.includes(value)).map((value) => inBody ? json(value) : value)
    add(
      "other-case",
      `${field} is a ${field} in another case`,
      spell([
        ...literals.map((value) => value.toUpperCase()),
        literals[0]!.charAt(0).toUpperCase() + literals[0]!.slice(1)
      ])
    )
    add("spaces", `${field} is a ${field} with surrounding spaces`, spell([` ${literals[0]}`, `${literals.at(-1)} `]))
    add(
      "prefix",
      `${field} is the prefix of a ${field}`,
      spell([literals[0]!, literals.at(-1)!].map((value) => value.slice(0, Math.max(1, value.length - 2))))
    )
    add("unknown", `${field} is not one of ${literals.join(", ")}`, spell([`${literals.join("-")}-unknown`, "unknown"]))
    add("empty", `${field} is the empty string`, spell([""]))
  }

  if (kind === "integer") {
    const whole = BigInt(base)
    add("fraction", `${field} is not a whole number`, [`${whole}.5`, `${whole}.0000001`])
    // In a body `7e0` is the integer 7 (JSON has one number type); written with an exponent, the classes are a
    // fraction and a number beyond int64. In a query or a path, an integer has no exponent.
    add("exponent", `${field} is written with an exponent`, inBody ? [`${whole}5e-1`, "1e19"] : [`${whole}e0`, "1e1"])
    if (node.format === "int64" || node.maximum !== undefined) {
      add("beyond-int64", `${field} is beyond the int64 range`, BEYOND_INT64)
    }
    if (node.format === "int64" || node.maximum !== undefined) {
      add(
        "beyond-safe",
        `${field} is 2^53 + 1, which a JavaScript number cannot hold`,
        [BEYOND_SAFE],
        outOfBounds(node, BEYOND_SAFE) ? "invalid" : "int64-inexact"
      )
    }
    add("zero", `${field} is 0`, ["0"].filter((text) => outOfBounds(node, text)))
    add("negative", `${field} is negative`, ["-1"].filter((text) => outOfBounds(node, text)))
    if (node.minimum !== undefined && node.minimum > 1) {
      add("below-minimum", `${field} is below ${node.minimum}`, [String(node.minimum - 1)])
    }
    if (node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER) {
      add("above-maximum", `${field} is above ${node.maximum}`, [String(node.maximum + 1), String(node.maximum * 10)])
    }
    if (!inBody && node.pattern !== undefined) {
      // Spellings of a valid number that the pattern refuses: a value has one spelling only.
      add(
        "other-spelling",
        `${field} is a valid number spelled otherwise`,
        [`0${whole}`, `+${whole}`, ` ${whole}`, `${whole}.0`]
          .filter((text) => refusesText(node, text))
      )
    }
  }

  if (kind === "string") {
    const text = inBody ? JSON.parse(base) as string : base
    const spell = (values: ReadonlyArray<string>) =>
      values.filter((value) => refusesText(node, value)).map((value) => inBody ? json(value) : value)
    add("empty", `${field} is the empty string`, spell([""]))
    add("blank", `${field} is only whitespace`, spell([" ", "  \t ", "\u00a0"]))
    if (node.maxLength !== undefined) {
      add("too-long", `${field} is over ${node.maxLength} characters`, spell([text.padEnd(node.maxLength + 1, "x")]))
    }
    add("control", `${field} holds a NUL character`, spell([`${text}\u0000`]))
  }
  return candidates
}

export interface DeriveOptions {
  readonly location: Location
  /** A valid value of each field, as the location spells it; the classes change one at a time. */
  readonly base: Readonly<Record<string, string>>
  /** Unknown fields are refused (the contract's bodies): derive the `unknown-field` class. */
  readonly closed?: boolean
  /**
   * The other side of the schema, whose pattern and lengths fill in what the first one lacks: the encoded side
   * tells how a query parameter must be spelled, the decoded side how long a trimmed name may be.
   */
  readonly otherSide?: Schema.Top
}

/** Every class of invalid value of the schema's fields and of the object as a whole. */
export const deriveClasses = (schema: Schema.Top, options: DeriveOptions): ReadonlyArray<ValueClass> => {
  const { properties, required } = objectOf(schema)
  const otherSide = options.otherSide === undefined ? {} : objectOf(options.otherSide).properties
  const baseFields: Fields = Object.entries(options.base)
  const replacing = (field: string, value: string | undefined): Fields =>
    baseFields.flatMap(([name, current]) =>
      name !== field ? [[name, current] as const] : value === undefined ? [] : [[name, value] as const]
    )

  const classes: Array<ValueClass> = []
  for (const [field, node] of Object.entries(properties)) {
    const base = options.base[field]
    if (base === undefined) continue
    const other = otherSide[field] ?? {}
    const filled: Node = {
      ...node,
      ...(node.pattern === undefined && other.pattern !== undefined ? { pattern: other.pattern } : {}),
      ...(node.minLength === undefined && other.minLength !== undefined ? { minLength: other.minLength } : {}),
      ...(node.maxLength === undefined && other.maxLength !== undefined ? { maxLength: other.maxLength } : {})
    }
    for (const candidate of fieldCandidates(field, filled, options.location, base)) {
      classes.push({
        field,
        name: candidate.name,
        description: candidate.description,
        standing: candidate.standing ?? "invalid",
        requests: candidate.values.map((value) => replacing(field, value))
      })
    }
    if (required.includes(field) && options.location === "body") {
      classes.push({
        field,
        name: "missing",
        description: `${field} is missing`,
        standing: "invalid",
        requests: [replacing(field, undefined)]
      })
    }
  }
  if (options.location === "body") {
    const present = required.filter((field) => field in options.base)
    if (present.length >= 2) {
      classes.push({
        field: "body",
        name: "missing-required",
        description: `${present.join(" and ")} are ${present.length === 2 ? "both" : "all"} missing`,
        standing: "invalid",
        requests: [baseFields.filter(([name]) => !present.includes(name))]
      })
    }
    if (options.closed === true) {
      const known = Object.keys(properties)
      // An unknown field, and one that differs from a known field only in case (a typo a lenient parser forgives).
      const nearName = known.map((name) => name.slice(0, -2) + name.slice(-2).toUpperCase()).find((name) =>
        !known.includes(name)
      )
      classes.push({
        field: "body",
        name: "unknown-field",
        description: "the body has an unknown field",
        standing: "invalid",
        requests: [
          [...baseFields, ["conformanceUnknown", "1"]],
          ...(nearName === undefined ? [] : [[...baseFields, [nearName, "1"] as const]])
        ]
      })
    }
  }
  return classes
}

/** A body as JSON text, from its fields' JSON texts. */
export const bodyText = (fields: Fields) => `{${fields.map(([name, value]) => `${json(name)}:${value}`).join(",")}}`

/** A query string (without `?`), from its fields' texts. */
export const queryText = (fields: Fields) =>
  fields.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&")
