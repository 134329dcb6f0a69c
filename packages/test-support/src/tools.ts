import { existsSync, realpathSync } from "node:fs"
import { delimiter, join } from "node:path"

const executableOnPath = (command: string): string | undefined =>
  (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(dir, command)).find(
    existsSync
  )

/**
 * Every binary of a real tool a test runs: the one on `PATH`, then those named in
 * the variable `envVar` (paths separated by `:`), each once.
 */
export const findToolBinaries = (
  options: { readonly command: string; readonly envVar: string }
): ReadonlyArray<string> => {
  const fromEnv = (process.env[options.envVar] ?? "").split(":").filter((path) => path !== "" && existsSync(path))
  const found = [executableOnPath(options.command), ...fromEnv].filter((path) => path !== undefined)
  const seen = new Set<string>()
  return found.filter((path) => {
    const real = realpathSync(path)
    if (seen.has(real)) return false
    seen.add(real)
    return true
  })
}

/**
 * A tool that CI installs (Chromium, HAProxy, faketime, PostgreSQL, the npm-served tools) is missing: on a
 * user's machine the suite is skipped with one line saying how to get the tool; under `CI=true` it is a
 * failure, since `.ci/run` installs it.
 */
export const missingTool = (message: string): { readonly skip: true } => {
  if (process.env.CI === "true") throw new Error(`CI=true and ${message}`)
  return optionalToolMissing(message)
}

/**
 * A tool that no registry these machines reach serves (k6, Schemathesis) is missing: the suite is skipped
 * with one line, under `CI=true` too. The line names the tool, how a user installs it and the variable that
 * points at it.
 */
export const optionalToolMissing = (message: string): { readonly skip: true } => {
  console.warn(`skipped: ${message}`)
  return { skip: true }
}
