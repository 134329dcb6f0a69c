import { eventually, freePort, serverEntry, spawnServer, startRedis, type TestRedis } from "@petstore/test-support"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { redisSuiteOptions } from "./support/layers.ts"

const main = serverEntry()

/** Starts the real server process with the given environment and waits for it to stop by itself. */
const start = async (env: Record<string, string>) =>
  spawnSync(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? "",
      DATA_DIR: ":memory:",
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      ...env
    },
    encoding: "utf8",
    timeout: 60_000
  })

const oneLine = (result: ReturnType<typeof spawnSync>) => {
  const lines = String(result.stderr).trim().split("\n")
  expect(lines, String(result.stderr)).toHaveLength(1)
  return lines[0]!
}

describe("the Redis quota store's configuration", () => {
  it.each([
    [{ QUOTA_STORE: "redis" }, "REDIS_URL: required by QUOTA_STORE=redis"],
    [{ QUOTA_STORE: "redis", REDIS_URL: "http://127.0.0.1:6390" }, "REDIS_URL: Expected a redis:// or rediss:// URL"],
    [{ QUOTA_STORE: "redis", REDIS_URL: "redis://a:1, http://b:2" }, "REDIS_URL: Expected"],
    [{ REDIS_URL: "redis://127.0.0.1:6390" }, "QUOTA_STORE: REDIS_URL is set: set QUOTA_STORE=redis to use it"],
    [{ QUOTA_STORE: "redis", REDIS_URL: "redis://a:1", REDIS_TYPE: "sentinel" }, "REDIS_TYPE: Expected"],
    [{ QUOTA_STORE: "redis", REDIS_URL: "redis://a:1", QUOTA_STORE_FAILURE: "maybe" }, "QUOTA_STORE_FAILURE: Expected"],
    [{ QUOTA_STORE: "redis", REDIS_URL: "redis://a:1", QUOTA_STORE_TIMEOUT: "0" }, "QUOTA_STORE_TIMEOUT: Expected"],
    [
      { QUOTA_STORE: "redis", REDIS_URL: "redis://127.0.0.1:6390?sslrootcert=/ca.pem" },
      "REDIS_URL: sslrootcert needs TLS: a rediss:// URL"
    ],
    [
      { QUOTA_STORE: "redis", REDIS_URL: "rediss://localhost:6390?sslmode=disable" },
      "REDIS_URL: the parameter sslmode is not supported (supported: sslrootcert, sslcert, sslkey)"
    ],
    [
      { QUOTA_STORE: "redis", REDIS_URL: "rediss://localhost:6390?sslcert=/client.pem" },
      "REDIS_URL: sslcert and sslkey go together: set both or neither"
    ],
    [
      { QUOTA_STORE: "redis", REDIS_TYPE: "cluster", REDIS_URL: "rediss://localhost:6390,redis://localhost:6391" },
      "REDIS_URL: the seed nodes differ in scheme or parameters: give each the same (redis:// or rediss://, and the same ?…)"
    ]
  ])("%j: exits 2 with one line naming the variable", async (env, message) => {
    const result = await start(env)
    expect(result.status).toBe(2)
    expect(oneLine(result)).toContain(`petstore: invalid configuration: ${message}`)
  })

  it("a Redis nobody listens on stops the start-up with one line naming REDIS_URL (exit 1)", async () => {
    const port = await freePort()
    const result = await start({ QUOTA_STORE: "redis", REDIS_URL: `redis://:not-logged@127.0.0.1:${port}` })
    expect(result.status).toBe(1)
    const line = oneLine(result)
    expect(line).toMatch(
      new RegExp(`^petstore: cannot start: REDIS_URL \\(127\\.0\\.0\\.1:${port}\\): cannot reach Redis: `)
    )
    expect(line).not.toContain("not-logged")
  })
})

describe("a Redis with a password, from REDIS_URL_FILE", redisSuiteOptions(), () => {
  const folder = mkdtempSync(join(tmpdir(), "petstore-redis-secret-"))
  let redis: TestRedis | undefined
  afterAll(async () => {
    await redis?.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  it("serves with the right password, logs it masked, and refuses the wrong one at start-up (exit 1)", async () => {
    redis = await startRedis({ password: "s3cret-redis-password" })
    const secretFile = join(folder, "redis-url")
    writeFileSync(secretFile, `${redis.url}\n`)
    const server = spawnServer({
      PORT: String(await freePort()),
      DATA_DIR: ":memory:",
      LOG_LEVEL: "Info",
      QUOTA_STORE: "redis",
      REDIS_URL_FILE: secretFile
    })
    try {
      expect(await eventually(() => server.output().includes("\"message\":\"listening\""), 60_000), server.output())
        .toBe(true)
      expect(server.output()).toContain(`"redisUrl":"redis://:***@127.0.0.1:${redis.nodes[0]!.port}"`)
      expect(server.output()).not.toContain("s3cret-redis-password")
    } finally {
      await server.stop()
    }

    writeFileSync(secretFile, redis.url.replace("s3cret", "wrong"))
    const refused = await start({ QUOTA_STORE: "redis", REDIS_URL_FILE: secretFile })
    expect(refused.status).toBe(1)
    const line = oneLine(refused)
    expect(line).toMatch(/^petstore: cannot start: REDIS_URL \(127\.0\.0\.1:\d+\): cannot reach Redis: /)
    expect(line).not.toContain("wrong-redis-password")
  }, 120_000)
})
