import { describe, expect, it } from "vitest"
import { embed, sql } from "../src/db/sql.ts"

describe("the sql tag", () => {
  it("binds every interpolation as a parameter, in order", () => {
    expect(sql`SELECT * FROM pets WHERE id = ${7} AND name = ${"Rex"}`).toEqual({
      text: "SELECT * FROM pets WHERE id = $1 AND name = $2",
      values: [7, "Rex"]
    })
  })

  it("splices an embedded statement's text in, its placeholders renumbered after those before it", () => {
    const created = sql`created AS (INSERT INTO pets (name, status) SELECT ${"Rex"}, ${"available"} FROM held)`
    expect(sql`WITH held AS (SELECT 1 WHERE ${"key"} = ${"key"}), ${embed(created)} SELECT ${true}, * FROM created`)
      .toEqual({
        text: "WITH held AS (SELECT 1 WHERE $1 = $2), " +
          "created AS (INSERT INTO pets (name, status) SELECT $3, $4 FROM held) SELECT $5, * FROM created",
        values: ["key", "key", "Rex", "available", true]
      })
  })

  it("renumbers two-digit placeholders whole ($10 is not $1 and a 0)", () => {
    const ten = Array.from({ length: 10 }, (_, index) => index)
    const inner = sql`VALUES (${ten[0]}, ${ten[1]}, ${ten[2]}, ${ten[3]}, ${ten[4]}, ${ten[5]}, ${ten[6]}, ${ten[7]}, ${
      ten[8]
    }, ${ten[9]})`
    const outer = sql`SELECT ${"first"}; ${embed(inner)}`
    expect(outer.text).toBe("SELECT $1; VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
    expect(outer.values).toEqual(["first", ...ten])
  })
})
