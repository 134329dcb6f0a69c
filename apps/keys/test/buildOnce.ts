import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

/**
 * The tests run the CLI as `pnpm keys` does: the bundle `pnpm build` makes (dist/main.js), built here from the
 * sources under test so that it is never an older one.
 */
export default function buildOnce() {
  execFileSync("pnpm", ["run", "--silent", "build"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: ["ignore", "ignore", "inherit"]
  })
}
