import { existsSync, readdirSync, realpathSync } from "node:fs"
import { delimiter, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root, and `../shared/tools` beside it: where CI keeps the real tools the registries lack. */
export const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url))
export const sharedToolsDir = join(repositoryRoot, "..", "shared", "tools")

const executableOnPath = (command: string): string | undefined =>
  (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(dir, command)).find(existsSync)

/**
 * Every binary of a real tool a test runs: those on `PATH`, those named in the
 * variable `envVar` (paths separated by `:`), and those under `../shared/tools`
 * that `shared` picks, each once.
 */
export const findToolBinaries = (options: {
  readonly command: string
  readonly envVar: string
  readonly shared: (toolsDir: string, entries: ReadonlyArray<string>) => ReadonlyArray<string>
}): ReadonlyArray<string> => {
  const fromEnv = (process.env[options.envVar] ?? "").split(":").filter((path) => path !== "" && existsSync(path))
  const fromShared = existsSync(sharedToolsDir)
    ? options.shared(sharedToolsDir, readdirSync(sharedToolsDir)).filter((path) => existsSync(path))
    : []
  const found = [executableOnPath(options.command), ...fromEnv, ...fromShared].filter((path) => path !== undefined)
  const seen = new Set<string>()
  return found.filter((path) => {
    const real = realpathSync(path)
    if (seen.has(real)) return false
    seen.add(real)
    return true
  })
}

/**
 * What a suite does when a tool it needs is missing: on a user's machine it is
 * skipped with one line saying how to get the tool; under `CI=true` it is a
 * failure, since CI always has `../shared/tools` beside the checkout.
 */
export const missingTool = (message: string): { readonly skip: true } => {
  if (process.env.CI === "true") throw new Error(`CI=true and ${message}`)
  console.warn(`skipped: ${message}`)
  return { skip: true }
}
