import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { fencedBlocks } from "../src/readme.ts"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/**
 * The READMEs, and every page of `docs/`, whose every block says, in an HTML comment on the line before it, how it is kept true:
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
  "packages/contract/README.md",
  ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)
]

const NOTE = /^(example: (?:`[^`]+` )?run as printed by|excerpt: proven by|excerpt: not run by a test:) /

describe.each(readmes)("%s", (readme) => {
  const blocks = fencedBlocks(readFileSync(join(root, readme), "utf8"))

  it("marks every fenced block as an example a test runs or an excerpt, naming the test", () => {
    // A page of docs/ may hold prose only; a README without a block would mean the parser found none.
    if (!readme.startsWith("docs/")) expect(blocks.length).toBeGreaterThan(0)
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

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string =>
  heading.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-")

/** The anchors of a Markdown file's headings, fenced blocks left out (a `# comment` in a shell block is none). */
const anchorsOf = (markdown: string): ReadonlySet<string> => {
  const anchors = new Set<string>()
  let fenced = false
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced
    const heading = fenced ? null : /^#+ (.*)$/.exec(line)
    if (heading !== null) anchors.add(anchorOf(heading[1]!))
  }
  return anchors
}

// Sections move between files (the operator material went to docs/): a relative link or an anchor left
// behind would point at nothing, and a reader would find it out first.
describe.each([...readmes, "SECURITY.md", "CHANGELOG.md"])("%s's links", (readme) => {
  it("point only at files of the repository that exist, and at headings those files hold", () => {
    const markdown = readFileSync(join(root, readme), "utf8")
    const links = [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!)
    // The repository stands alone: addresses in the text are examples, never links a reader must follow.
    expect(links.filter((target) => /^[a-z][a-z0-9+.-]*:/i.test(target)), `${readme} links outside itself`)
      .toEqual([])
    for (const link of links) {
      const [path, anchor] = link.split("#") as [string, string | undefined]
      const target = path === "" ? join(root, readme) : join(root, dirname(readme), path)
      expect(target.startsWith(root), `${readme}: ${link} leaves the repository`).toBe(true)
      expect(existsSync(target), `${readme}: ${link}`).toBe(true)
      if (anchor !== undefined && target.endsWith(".md")) {
        expect(anchorsOf(readFileSync(target, "utf8")), `${readme}: ${link}`).toContain(anchor)
      }
    }
  })
})
