import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { fencedBlocks } from "../src/readme.ts"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/**
 * The READMEs whose every block says, in an HTML comment on the line before it, how it is kept true:
 * - `example: run as printed by FILE …`: FILE reads the block out of this README (`blockContaining`) and runs it;
 * - `excerpt: proven by FILE …`: a block with placeholders, or one that needs what a test cannot have (a
 *   registry, a systemd host), and FILE the test that does what it shows;
 * - `excerpt: not run by a test: WHY`, where none can, said openly.
 */
const readmes = [
  "README.md",
  "deploy/README.md",
  "bench/README.md",
  "load-tests/README.md",
  "packages/conformance/README.md",
  "packages/contract/README.md"
]

const NOTE = /^(example: (?:`[^`]+` )?run as printed by|excerpt: proven by|excerpt: not run by a test:) /

describe.each(readmes)("%s", (readme) => {
  const blocks = fencedBlocks(readFileSync(join(root, readme), "utf8"))

  it("marks every fenced block as an example a test runs or an excerpt, naming the test", () => {
    expect(blocks.length).toBeGreaterThan(0)
    for (const block of blocks) {
      const where = `${readme}:${block.line}`
      expect(block.note, where).toMatch(NOTE)
      if (block.note!.startsWith("excerpt: not run by a test:")) continue
      const named = [...block.note!.matchAll(/(?:^|[\s(])((?:[\w.-]+\/)+[\w.-]+\.(?:ts|cfg|run)|\.ci\/run)\b/g)]
        .map((match) => match[1]!)
      expect(named.length, `${where}: ${block.note}`).toBeGreaterThan(0)
      for (const path of named) expect(existsSync(join(root, path)), `${where}: ${path}`).toBe(true)
    }
  })

  it("runs each block it calls an example from the README itself, not from a copy", () => {
    for (const block of blocks.filter((block) => block.note?.startsWith("example:"))) {
      const named = [...block.note!.matchAll(/((?:[\w.-]+\/)+[\w.-]+\.ts)/g)].map((match) => match[1]!)
      // The test itself, or the helper it runs the block through, reads the block out of this README.
      const reads = named.filter((path) => {
        const source = readFileSync(join(root, path), "utf8")
        return source.includes("blockContaining(") && source.includes(readme)
      })
      expect(reads, `${readme}:${block.line}: ${block.note}`).not.toEqual([])
    }
  })
})
