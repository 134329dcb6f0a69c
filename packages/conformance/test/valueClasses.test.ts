import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { SpecNewPet } from "../src/specSchemas.ts"
import { bodyText, deriveClasses } from "../src/valueClasses.ts"

const names = (classes: ReturnType<typeof deriveClasses>) => classes.map((klass) => `${klass.field}.${klass.name}`)

describe("the value classes", () => {
  const base = { name: "\"Rex\"", categoryId: "7", status: "\"available\"" }

  it("are derived from the schema: a field added to it gets its classes with no other change", () => {
    const before = names(deriveClasses(SpecNewPet, { location: "body", base }))
    const Extended = Schema.Struct({
      ...SpecNewPet.fields,
      age: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 40 }))
    })
    const after = names(deriveClasses(Extended, { location: "body", base: { ...base, age: "3" } }))
    const added = after.filter((name) => !before.includes(name))
    expect(added).toEqual(
      expect.arrayContaining(["age.null", "age.fraction", "age.negative", "age.above-maximum", "age.missing"])
    )
    // 0 is within the new field's bounds: no class for it.
    expect(added).not.toContain("age.zero")
  })

  it("change one field at a time, writing numbers beyond a JavaScript number's precision as they are", () => {
    const classes = deriveClasses(SpecNewPet, { location: "body", base })
    const beyond = classes.find((klass) => klass.field === "categoryId" && klass.name === "beyond-int64")!
    expect(beyond.requests.map(bodyText)).toEqual([
      "{\"name\":\"Rex\",\"categoryId\":9223372036854775808,\"status\":\"available\"}",
      "{\"name\":\"Rex\",\"categoryId\":-9223372036854775809,\"status\":\"available\"}"
    ])
    // An int64 that a double rounds is allowed by the type: its checks accept it stored exactly.
    expect(classes.find((klass) => klass.name === "beyond-safe")?.standing).toBe("int64-inexact")
    const missing = classes.find((klass) => klass.name === "missing-required")!
    expect(missing.requests.map(bodyText)).toEqual(["{\"status\":\"available\"}"])
  })

  it("derive near values of an enumeration, and every class is refused by the schema it came from", () => {
    const classes = deriveClasses(SpecNewPet, { location: "body", base })
    const status = classes.filter((klass) => klass.field === "status").map((klass) => klass.name)
    expect(status).toEqual([
      "number",
      "boolean",
      "null",
      "array",
      "object",
      "other-case",
      "spaces",
      "prefix",
      "unknown",
      "empty"
    ])
    const decode = Schema.decodeUnknownOption(SpecNewPet)
    for (const klass of classes.filter((klass) => klass.standing === "invalid")) {
      for (const request of klass.requests) {
        expect(decode(JSON.parse(bodyText(request)))._tag, `${klass.field}.${klass.name}: ${bodyText(request)}`).toBe(
          "None"
        )
      }
    }
  })
})
