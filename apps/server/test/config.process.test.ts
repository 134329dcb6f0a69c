import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { eventually, freePort, spawnServer } from "@petstore/test-support"

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
    ["LOG_LEVEL", "loud"],
    ["DATABASE_POOL_SIZE", "0"],
    ["DATABASE_POOL_SIZE", "101"],
    ["DATABASE_DIRECT_URL", "postgres://localhost/db"],
    ["DATABASE_PREPARED_STATEMENTS", "sometimes"]
  ])("%s=%s: exits 2 with one line naming the variable", (name, value) => {
    const result = start({ [name]: value })
    expect(result.status).toBe(2)
    const lines = result.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`^petstore: invalid configuration: ${name}: `))
  })
})

describe("the configuration log line", () => {
  it.each([
    [{}, { banThreshold: "<the key's per-minute limit>", otlpEndpoint: "<unset: no traces>", publicBaseUrl: "<from request>" }],
    [{ BAN_THRESHOLD: "7", PUBLIC_BASE_URL: "https://pets.example.com" }, { banThreshold: 7, publicBaseUrl: "https://pets.example.com/" }]
  ])("with %j shows every value as a person reads it, never an Option", async (env, expected) => {
    const server = spawnServer({ PORT: String(await freePort()), DATA_DIR: ":memory:", LOG_LEVEL: "Info", ...env })
    try {
      const configuration = () =>
        server.output().split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as {
          message: string
          annotations: Record<string, unknown>
        }).find((line) => line.message === "configuration")
      expect(await eventually(() => configuration() !== undefined, 20_000), server.output()).toBe(true)
      const values = configuration()!.annotations
      expect(values).toMatchObject(expected)
      for (const [name, value] of Object.entries(values)) {
        expect(["string", "number", "boolean"], `${name}: ${JSON.stringify(value)}`).toContain(typeof value)
      }
    } finally {
      await server.stop()
    }
  })
})
