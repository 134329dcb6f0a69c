import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { catalogue } from "../src/suite.ts"

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")

/** The rows of the README's first table under `## Spec coverage`, as their cells. */
const coverageRows = () => {
  const section = readme.split(/^## /m).find((part) => part.startsWith("Spec coverage\n"))!
  const table = section.split("\n\n").find((block) => block.startsWith("| § | statement | checks |"))!
  return table.split("\n").slice(2).map((line) => line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, "")))
}

const PLACEHOLDERS: Record<string, ReadonlyArray<string>> = {
  "<plan>": ["free", "pro", "business", "enterprise"],
  "<operation>": ["listPets", "createPet", "getPet"]
}

/** `<plan>.burst` is four check ids, `auth.<operation>.missing` three. */
const expand = (id: string): ReadonlyArray<string> => {
  const placeholder = Object.keys(PLACEHOLDERS).find((name) => id.includes(name))
  return placeholder === undefined
    ? [id]
    : PLACEHOLDERS[placeholder]!.flatMap((value) => expand(id.replace(placeholder, value)))
}

const namedIn = (cell: string) =>
  [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!).filter((name) => /^[\w<>-]+\.[\w<>.-]+$/.test(name))

describe("the README's spec coverage table", () => {
  const checks = Effect.runSync(catalogue)
  const rows = coverageRows()

  it("has a row for each of the spec's sections with observable statements, each naming checks", () => {
    expect(rows.length).toBeGreaterThan(30)
    for (const [section, statement, named] of rows) {
      expect(namedIn(named ?? ""), `§${section} ${statement}`).not.toHaveLength(0)
    }
    const sections = new Set(rows.flatMap(([section]) => section!.split(", ").map((number) => number.split(".")[0])))
    expect([...sections].sort()).toEqual(["1", "2", "3", "4", "5", "7", "8", "9"])
  })

  it("names only checks that exist, and only spec checks", () => {
    const byId = new Map(checks.map((check) => [check.id, check]))
    for (const [section, statement, named] of rows) {
      for (const id of namedIn(named!).flatMap(expand)) {
        expect(byId.get(id)?.tag, `§${section} ${statement}: ${id}`).toBe("spec")
      }
    }
  })

  it("names every spec check of the catalogue", () => {
    const named = new Set(rows.flatMap(([, , cell]) => namedIn(cell!).flatMap(expand)))
    const missing = checks.filter((check) => check.tag === "spec" && !named.has(check.id)).map((check) => check.id)
    expect(missing).toEqual([])
  })
})

describe("the README's list of every check", () => {
  it("has each check of the catalogue, with its tag", () => {
    for (const check of Effect.runSync(catalogue)) {
      const id = check.id.replace(/^(free|pro|business|enterprise)\./, "<plan>.")
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${id}\` |`))
      expect(row, check.id).toBeDefined()
      expect(row, check.id).toContain(`| ${check.tag} |`)
    }
  })
})

describe("the README's table of value classes", () => {
  /** The rows of the table under `## Value classes`, as their cells. */
  const rows = () => {
    const section = readme.split(/^## /m).find((part) => part.startsWith("Value classes\n"))!
    const table = section.split("\n\n").find((block) => block.startsWith("| check | operation | field | class |"))!
    return table.split("\n").slice(2).map((line) => line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, "")))
  }

  it("has a row for each value-class check of the catalogue, and no other, naming its operation, field and class", () => {
    const valueChecks = Effect.runSync(catalogue).filter((check) => /^(values|contract)\./.test(check.id))
    const table = rows()
    expect(table.map(([id]) => id!.replaceAll("`", "")).sort()).toEqual(valueChecks.map((check) => check.id).sort())
    for (const [id, operation, field, name] of table) {
      expect(id!.replaceAll("`", "").split(".").slice(1), id).toEqual([operation, field, name])
    }
  })
})
