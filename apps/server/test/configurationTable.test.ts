import { ConfigProvider, Effect } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { AppConfigShape } from "../src/config.ts"
import { SECRET_VARIABLES } from "../src/configSecrets.ts"

/** Every variable the server reads: the configuration parsed from a provider that records what it is asked. */
const variablesRead = () => {
  const asked = new Set<string>()
  const recording = ConfigProvider.make((path) => {
    if (typeof path[0] === "string") asked.add(path[0])
    return Effect.succeed(undefined)
  })
  Effect.runSync(Effect.exit(AppConfigShape.parse(recording)))
  return asked
}

/** The first column of the README's configuration table: one or more `NAME`s a row. */
const variablesDocumented = () => {
  const readme = readFileSync(fileURLToPath(new URL("../../../README.md", import.meta.url)), "utf8")
  const section = readme.slice(
    readme.indexOf("\n## Configuration\n"),
    readme.indexOf("\n## ", readme.indexOf("\n## Configuration\n") + 1)
  )
  const rows = section.split("\n").filter((line) => line.startsWith("| `"))
  return new Set(
    rows.flatMap((row) => [...row.split(" | ")[0]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!))
  )
}

// An operator learns the settings from this table: a variable the server reads and the table leaves out is a
// setting no one can find, and a row for one it no longer reads is a setting that silently does nothing.
describe("the README's configuration table", () => {
  it("names every variable the server reads, with NAME_FILE for each secret, and nothing else", () => {
    const read = variablesRead()
    expect(read.size).toBeGreaterThan(20)
    const expected = [...read, ...SECRET_VARIABLES.map((name) => `${name}_FILE`)].sort()
    expect([...variablesDocumented()].sort()).toEqual(expected)
  })
})
