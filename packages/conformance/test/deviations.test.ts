import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { DEVIATIONS } from "./fixture/deviations.ts"
import { catchesEach, isAboutResources } from "./support/deviationRuns.ts"

describe("the deviations of the fixture", () => {
  it("are at least 25, each with a name of its own", () => {
    expect(DEVIATIONS.length).toBeGreaterThanOrEqual(25)
    expect(new Set(DEVIATIONS.map((deviation) => deviation.name)).size).toBe(DEVIATIONS.length)
  })

  it("are all in the README's table, with the checks that catch them", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
    for (const deviation of DEVIATIONS) {
      const row = readme.split("\n").find((line) => line.startsWith(`| \`${deviation.name}\``))
      expect(row, deviation.name).toBeDefined()
      for (const check of deviation.caughtBy) expect(row, deviation.name).toContain(`\`${check}\``)
    }
  })
})

// Split over two files so that two workers share the work.
catchesEach(DEVIATIONS.filter(isAboutResources))
