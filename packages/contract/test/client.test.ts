import { Effect, Option, Schema } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import { readdirSync, readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import * as Contract from "../src/index.ts"
import { makeAdminClient, makePetstoreClient, nextCursor } from "../src/index.ts"

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

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")

/** The rows of the README's first table after `heading`, each as its cells. */
const tableAfter = (heading: string) => {
  const start = readme.indexOf(heading)
  expect(start, heading).toBeGreaterThan(-1)
  const lines = readme.slice(start).split("\n")
  const first = lines.findIndex((line) => line.startsWith("| "))
  const end = lines.findIndex((line, i) => i > first && !line.startsWith("|"))
  return lines.slice(first + 2, end).map((line) => line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, "")))
}

/** The method names of a table's first column: `name(` and `group.name(`. */
const methodsOf = (rows: ReadonlyArray<ReadonlyArray<string>>) =>
  rows.flatMap((row) => [...row[0]!.matchAll(/`([\w.]+)\(/g)].map((match) => match[1]!)).sort()

const withHttpClient = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) =>
  Effect.runPromise(Effect.provide(effect, FetchHttpClient.layer))

describe("README.md", () => {
  it.each(readdirSync(new URL("../examples", import.meta.url)))(
    "shows examples/%s as it is, the file tests run",
    (name) => {
      const example = readFileSync(new URL(`../examples/${name}`, import.meta.url), "utf8")
      expect(readme).toContain("```ts\n" + example + "```\n")
    }
  )

  it("lists every method of the public client, and no other", async () => {
    const client = await withHttpClient(makePetstoreClient({ baseUrl: "http://127.0.0.1:9", apiKey: "psk_test" }))
    expect(methodsOf(tableAfter("## `PetstoreClient`"))).toEqual(Object.keys(client).sort())
  })

  it("lists every method of the admin client, and no other", async () => {
    const client = await withHttpClient(makeAdminClient({ baseUrl: "http://127.0.0.1:9", adminToken: "t" }))
    const methods = Object.entries(client).flatMap(([group, calls]) =>
      Object.keys(calls).map((call) => `${group}.${call}`)
    )
    expect(methodsOf(tableAfter("## The admin client"))).toEqual(methods.sort())
  })

  it("names every error class an operation can fail with by its tag, at its status", () => {
    const rows = tableAfter("### Errors, by tag")
    const documented = rows.flatMap(([cell]) => {
      const status = /\((\d{3})\)$/.exec(cell!)?.[1]
      return [...cell!.matchAll(/`(\w+)`( \((\d{3})\))?/g)].map((match) => [match[1]!, match[3] ?? status] as const)
    })
    // Of the classes, only the ones the router and the last-resort handler answer with are declared by no operation.
    const declared = Object.entries(Contract)
      .filter(([name, value]) =>
        Schema.isSchema(value) && typeof value === "function" && value.prototype instanceof globalThis.Error &&
        name !== "MethodNotAllowed" && name !== "InternalError"
      )
      .map(([name, value]) => [name, String((value as typeof Contract.NotFound).fields.status.ast.literal)] as const)
    expect(new Map(documented)).toEqual(
      new Map([...declared, ["SchemaError", undefined], ["HttpClientError", undefined]])
    )
  })
})
