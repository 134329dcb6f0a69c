import { Option } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { nextCursor } from "../src/index.ts"

describe("nextCursor", () => {
  it("takes the cursor of the rel=\"next\" link, wherever it is among the links", () => {
    expect(nextCursor(`<https://pets.example/v1/pets?limit=20&cursor=abc_-1>; rel="next"`)).toEqual(
      Option.some("abc_-1")
    )
    expect(nextCursor(`</v1/pets>; rel="successor-version", <http://127.0.0.1:8080/v1/pets?cursor=xyz>; rel=next`))
      .toEqual(Option.some("xyz"))
  })

  it("finds none without a header, without a next link, or with a next link without a cursor", () => {
    expect(nextCursor(undefined)).toEqual(Option.none())
    expect(nextCursor(`</v1/pets>; rel="successor-version"`)).toEqual(Option.none())
    expect(nextCursor(`<https://pets.example/v1/pets?limit=20>; rel="next"`)).toEqual(Option.none())
  })
})

describe("README.md", () => {
  it("shows examples/quickstart.ts as it is, the file the server's tests run", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
    const example = readFileSync(new URL("../examples/quickstart.ts", import.meta.url), "utf8")
    expect(readme).toContain("```ts\n" + example + "```\n")
  })
})
