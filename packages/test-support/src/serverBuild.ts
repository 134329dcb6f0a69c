import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const runBuilt = fileURLToPath(new URL("../../../scripts/runBuilt.js", import.meta.url))

/**
 * Vitest's global setup for the suites that start server processes, which run the compiled build
 * (`serverEntry`). Under turbo (`pnpm test`, `pnpm test:system`, which set `TURBO_HASH` for each task) the task's
 * `dependsOn` has built it, and nothing is done here: building again beside suites already running would rewrite
 * the bundle under their processes. Run directly (`vitest run` in a package), the server is built first when its
 * build is missing or older than its sources, as `pnpm start` does (`scripts/runBuilt.js`), so an edit is never
 * tested stale.
 */
export default function setup() {
  if (process.env.TURBO_HASH !== undefined) return
  const result = spawnSync(process.execPath, [runBuilt, "apps/server"], { stdio: "inherit" })
  if (result.error !== undefined || result.status !== 0) {
    throw new Error(`building @petstore/server for the suites failed (${result.error?.message ?? "see above"})`)
  }
}
