import { ESLint } from "eslint"
import { existsSync, readdirSync } from "node:fs"
import path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { lintConfig, serverRooms, tableWriters } from "../eslint.config.js"

const fixtures = path.join(import.meta.dirname, "fixtures")
const serverSource = path.resolve(import.meta.dirname, "../../../apps/server/src")

/** The rule and message of every problem ESLint finds in each fixture file, with the project's configuration. */
const lintFixtures = async () => {
  const eslint = new ESLint({ cwd: fixtures, overrideConfigFile: true, overrideConfig: lintConfig(fixtures) })
  const results = await eslint.lintFiles(["apps/server/src/**/*.ts"])
  return new Map(results.map((result) => [
    path.relative(path.join(fixtures, "apps/server/src"), result.filePath),
    result.messages.map((message) => `${message.ruleId}: ${message.message}`)
  ]))
}

describe("the lint rules", () => {
  let found: Map<string, Array<string>>
  // One ESLint run over the fixture tree: building the type-aware program is the slow part, slower on a busy machine.
  beforeAll(async () => {
    found = await lintFixtures()
  }, 180_000)

  it("refuse an import from a room above", () => {
    expect(found.get("pets/Pets.ts")).toEqual([
      "import-x/no-restricted-paths: Unexpected path \"../http/routes.ts\" imported in restricted zone. " +
      "The services room imports only from its own room and those below it: " +
      "main → server → http → services → db → config/net/observability (tools/lint/eslint.config.js)."
    ])
  })

  it("refuse SQL run from http", () => {
    expect(found.get("http/probe.ts")).toEqual([
      expect.stringMatching(/^import-x\/no-restricted-paths: Unexpected path "\.\.\/db\/sql\.ts".*http runs no SQL/)
    ])
  })

  it("refuse an import cycle", () => {
    expect(found.get("orders/Orders.ts")).toEqual([expect.stringMatching(/^import-x\/no-cycle: /)])
    expect(found.get("orders/OrderDesk.ts")).toEqual([expect.stringMatching(/^import-x\/no-cycle: /)])
  })

  it("refuse an import cycle made of type imports, which import-x/no-cycle does not follow", () => {
    expect(found.get("webhooks/Endpoints.ts")).toEqual([
      "petstore/no-type-import-cycle: Import cycle through a type import: Endpoints.ts → Deliveries.ts → Endpoints.ts."
    ])
    expect(found.get("webhooks/Deliveries.ts")).toEqual([
      "petstore/no-type-import-cycle: Import cycle through a type import: Deliveries.ts → Endpoints.ts → Deliveries.ts."
    ])
  })

  it("refuse a write to a table outside the modules that own it, and run the type-aware rules", () => {
    expect(found.get("idempotency/IdempotencyKeys.ts")).toEqual([
      "no-restricted-syntax: Only pets/Pets.ts, orders/Orders.ts write the pets table " +
      "(tableWriters in tools/lint/eslint.config.js).",
      expect.stringMatching(/^@typescript-eslint\/no-floating-promises: Promises must be awaited/)
    ])
  })

  it("find nothing in a file that keeps them", () => {
    expect(found.get("http/routes.ts")).toEqual([])
    expect(found.get("db/sql.ts")).toEqual([])
  })
})

describe("the server's map", () => {
  it("puts every file of apps/server/src in a room", () => {
    const files = readdirSync(serverSource, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(serverSource, path.join(entry.parentPath, entry.name)))
    const roomless = files.filter((file) =>
      !serverRooms.some(({ paths }) => paths.some((room) => file === room || file.startsWith(`${room}/`)))
    )
    expect(files.length).toBeGreaterThan(50)
    expect(roomless).toEqual([])
  })

  it("names only modules that exist as a table's writers", () => {
    const writers = [...new Set(Object.values(tableWriters).flat())]
    expect(writers.filter((file) => !existsSync(path.join(serverSource, file)))).toEqual([])
  })
})
