import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** A fenced block of a Markdown file, as a reader copies it: without the list item's indentation. */
export interface FencedBlock {
  /** The fence's info string: `sh`, `sql`, `ini`, … (empty when none). */
  readonly language: string
  readonly text: string
  /** The 1-based line of the opening fence. */
  readonly line: number
  /** The HTML comment on the line just before the fence, if any: where a block says which test proves it. */
  readonly note: string | undefined
}

/** Every fenced block of a Markdown document, in order. */
export const fencedBlocks = (markdown: string): Array<FencedBlock> => {
  const lines = markdown.split("\n")
  const blocks: Array<FencedBlock> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\S*)\s*$/.exec(lines[i]!)
    if (open === null) continue
    const [, indent, language] = open
    const end = lines.findIndex((line, j) => j > i && line.trimStart().startsWith("```"))
    if (end === -1) throw new Error(`line ${i + 1}: a fence that never closes`)
    const body = lines.slice(i + 1, end).map((line) => line.startsWith(indent!) ? line.slice(indent!.length) : line)
    const before = i > 0 ? /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[i - 1]!) : null
    blocks.push({ language: language!, text: `${body.join("\n")}\n`, line: i + 1, note: before?.[1] })
    i = end
  }
  return blocks
}

/** The one fenced block of the file at `path` that contains `needle`, as printed: a test runs it, not a copy. */
export const blockContaining = (path: string, needle: string): FencedBlock => {
  const found = fencedBlocks(readFileSync(path, "utf8")).filter((block) => block.text.includes(needle))
  if (found.length !== 1) throw new Error(`${path}: ${found.length} fenced blocks contain ${JSON.stringify(needle)}`)
  return found[0]!
}

/**
 * `text` with each pair's first string replaced by its second, everywhere: what a test must change to run a
 * printed example on this machine (a free port for 8080, say), and nothing else. Each must occur, so an example
 * edited away from the test fails it rather than running unchanged.
 */
export const substituted = (text: string, pairs: ReadonlyArray<readonly [string, string]>): string =>
  pairs.reduce((result, [from, to]) => {
    if (!result.includes(from)) throw new Error(`the example no longer contains ${JSON.stringify(from)}:\n${text}`)
    return result.split(from).join(to)
  }, text)

/**
 * docs/postgresql.md's "Roles and migrations" SQL as printed, one statement an entry, for a role, database and
 * schema owner of a test's own; the role without a password, since test databases trust local connections.
 */
export const readmeRuntimeRoleStatements = (role: string, database: string, owner: string): Array<string> =>
  substituted(
    blockContaining(fileURLToPath(new URL("../../../docs/postgresql.md", import.meta.url)), "CREATE ROLE petstore_app")
      .text,
    [
      ["CREATE ROLE petstore_app LOGIN PASSWORD '…'", "CREATE ROLE petstore_app LOGIN"],
      ["petstore_app", role],
      ["FOR ROLE petstore_owner", `FOR ROLE ${owner}`],
      ["ON DATABASE petstore TO", `ON DATABASE ${database} TO`]
    ]
  ).trim().split(/;\n/).map((statement) => statement.replace(/;$/, ""))
