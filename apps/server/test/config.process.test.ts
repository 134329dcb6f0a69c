import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/** Starts the real server process with the given environment and waits for it to stop by itself. */
const start = (env: Record<string, string>) =>
  spawnSync(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? "", DATA_DIR: ":memory:", ...env },
    encoding: "utf8",
    timeout: 20_000
  })

describe("bad configuration stops the server at start-up", () => {
  it.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["ADMIN_PORT", "-1"],
    ["ADMIN_TOKEN", "short"],
    ["DATABASE_URL", "mysql://localhost/db"],
    ["PUBLIC_BASE_URL", "not a url"],
    ["LOG_LEVEL", "loud"]
  ])("%s=%s: exits 2 with one line naming the variable", (name, value) => {
    const result = start({ [name]: value })
    expect(result.status).toBe(2)
    const lines = result.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`^petstore: invalid configuration: ${name}: `))
  })
})
