import { spawnSync } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { eventually, freePort, serverEntry, spawnServer } from "@petstore/test-support"

const main = serverEntry()

/** Starts the real server process with the given environment and waits for it to stop by itself. */
const start = (env: Record<string, string>) =>
  spawnSync(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? "", DATA_DIR: ":memory:", ...env },
    encoding: "utf8",
    timeout: 120_000
  })

describe("bad configuration stops the server at start-up", () => {
  it.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["ADMIN_PORT", "-1"],
    ["ADMIN_TOKEN", "short"],
    ["DATABASE_URL", "mysql://localhost/db"],
    ["DATABASE_URL", "postgres://localhost/db?sslcompression=1"],
    ["DATABASE_URL", "postgres://localhost/db?sslmode=maybe"],
    ["DATABASE_URL", "postgres://localhost/db?sslcert=/client.pem"],
    ["DATABASE_DIRECT_URL", "postgres://localhost/db?target_session_attrs=leader"],
    ["PUBLIC_BASE_URL", "not a url"],
    ["LOG_LEVEL", "loud"],
    ["TRUST_PROXY", "yes"],
    ["TRUST_PROXY", "10.0.0.0/33"],
    ["TRUST_PROXY", "proxy.example"],
    ["DATABASE_POOL_SIZE", "0"],
    ["DATABASE_POOL_SIZE", "101"],
    ["DATABASE_STATEMENT_TIMEOUT", "0"],
    ["DATABASE_STATEMENT_TIMEOUT", "301"],
    ["KEEP_ALIVE_TIMEOUT", "0"],
    ["KEEP_ALIVE_TIMEOUT", "3601"],
    ["DATABASE_DIRECT_URL", "postgres://localhost/db"],
    ["DATABASE_PREPARED_STATEMENTS", "sometimes"],
    ["CORS_ALLOWED_ORIGINS", "https://app.example/"],
    ["CORS_ALLOWED_ORIGINS", "app.example"],
    ["CORS_ALLOWED_ORIGINS", "https://app.example, *"],
    ["CORS_ALLOWED_ORIGINS", "https://app.example:99999"]
  ])("%s=%s: exits 2 with one line naming the variable", (name, value) => {
    const result = start({ [name]: value })
    expect(result.status).toBe(2)
    const lines = result.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`^petstore: invalid configuration: ${name}: `))
  })
})

describe("WORKERS above 1", () => {
  it.each([
    [{}, "2 processes need PostgreSQL (set DATABASE_URL)"],
    [
      { DATABASE_URL: "postgres://127.0.0.1:1/petstore", QUOTA_STORE: "memory" },
      "2 processes need a shared quota store"
    ]
  ])("without %j: exits 2 with one line naming WORKERS and what it needs", (env, says) => {
    const result = start({ WORKERS: "2", ...env })
    expect(result.status).toBe(2)
    const lines = result.stderr.trim().split("\n")
    expect(lines, result.stderr).toHaveLength(1)
    expect(lines[0]).toContain(`petstore: invalid configuration: WORKERS: ${says}`)
  })
})

describe("secrets from files (NAME_FILE)", () => {
  const folder = mkdtempSync(join(tmpdir(), "petstore-secrets-"))
  afterAll(() => rmSync(folder, { recursive: true, force: true }))
  const file = (name: string, contents: string | Buffer) => {
    const path = join(folder, name)
    writeFileSync(path, contents)
    return path
  }
  const oneLine = (result: ReturnType<typeof start>) => {
    const lines = result.stderr.trim().split("\n")
    expect(lines, result.stderr).toHaveLength(1)
    return lines[0]
  }

  it("a token read from a file, less its trailing newline, serves the admin API; the log shows neither", async () => {
    const token = "token-from-a-file-0123456789"
    const [port, adminPort] = [await freePort(), await freePort()]
    const server = spawnServer({
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      HOST: "127.0.0.1",
      DATA_DIR: ":memory:",
      LOG_LEVEL: "Info",
      ADMIN_TOKEN_FILE: file("admin-token", `${token}\n`)
    })
    try {
      const status = (bearer: string) =>
        fetch(`http://127.0.0.1:${adminPort}/admin/keys`, { headers: { authorization: `Bearer ${bearer}` } })
          .then((response) => response.status, () => 0)
      expect(await eventually(async () => await status(token) === 200, 90_000), server.output()).toBe(true)
      expect(server.output()).not.toContain(token)
    } finally {
      await server.stop()
    }
  })

  it.each(["ADMIN_TOKEN", "DATABASE_URL"])("%s and %s_FILE both set: exits 2 with one line naming %s_FILE", (name) => {
    const result = start({ [name]: "postgres://a-value-long-enough@x/db", [`${name}_FILE`]: file(`${name}-both`, "x") })
    expect(result.status).toBe(2)
    expect(oneLine(result)).toBe(`petstore: invalid configuration: ${name}_FILE: ${name} is set too; set one of them`)
  })

  it.each([
    ["a missing file", () => join(folder, "missing"), "ENOENT"],
    ["a folder", () => folder, "not a regular file"],
    ["a file over 64 KiB", () => file("large", Buffer.alloc(64 * 1024 + 1, "a")), "larger than 65536 bytes"],
    ["an unreadable file", () => {
      const path = file("unreadable", "secret-never-shown")
      chmodSync(path, 0o000)
      return path
    }, "EACCES"]
  ])("DATABASE_URL_FILE naming %s: exits 2 with one line naming it", (_, path, cause) => {
    const named = path()
    // root reads a file of mode 000 all the same: that case is for other users
    if (cause === "EACCES" && process.getuid?.() === 0) return
    const result = start({ DATABASE_URL_FILE: named })
    expect(result.status).toBe(2)
    expect(oneLine(result)).toBe(`petstore: invalid configuration: DATABASE_URL_FILE: cannot read ${named}: ${cause}`)
  })

  it("a file's contents are checked as the variable's value would be, naming the variable", () => {
    const result = start({ DATABASE_URL_FILE: file("mysql-url", "mysql://secret-never-shown@localhost/db\n") })
    expect(result.status).toBe(2)
    expect(oneLine(result)).toMatch(/^petstore: invalid configuration: DATABASE_URL: /)
    expect(result.stderr).not.toContain("secret-never-shown")
  })
})

describe("the configuration log line", () => {
  it.each([
    [{}, {
      banThreshold: "<the key's per-minute limit>",
      otlpEndpoint: "<unset: no traces>",
      publicBaseUrl: "<from request>"
    }],
    [{ BAN_THRESHOLD: "7", PUBLIC_BASE_URL: "https://pets.example.com" }, {
      banThreshold: 7,
      publicBaseUrl: "https://pets.example.com/"
    }]
  ])("with %j shows every value as a person reads it, never an Option", async (env, expected) => {
    const values = await loggedConfiguration({ DATA_DIR: ":memory:", ...env })
    expect(values).toMatchObject(expected)
    for (const [name, value] of Object.entries(values)) {
      expect(["string", "number", "boolean"], `${name}: ${JSON.stringify(value)}`).toContain(typeof value)
    }
  })

  it.each([
    [
      "PGlite: its folder, none of PostgreSQL's connection settings, no admin address without an admin listener, " +
      "and no Redis settings beside the memory store",
      { DATA_DIR: ":memory:" },
      { dataDir: ":memory:", databaseUrl: "<unset: embedded PGlite>", quotaStore: "memory" },
      [
        "databaseDirectUrl",
        "databasePoolSize",
        "databasePreparedStatements",
        "adminHost",
        "adminPort",
        "redisType",
        "redisUrl",
        "quotaStoreFailure",
        "quotaStoreTimeoutMillis"
      ]
    ],
    [
      "PostgreSQL: its settings, and no PGlite folder",
      // The line comes before the database opens: this one need not exist.
      { DATABASE_URL: "postgres://petstore@127.0.0.1:1/petstore", ADMIN_TOKEN: "test-admin-token-not-a-secret" },
      { databaseUrl: "postgres://petstore@127.0.0.1:1/petstore", databasePoolSize: 10, adminHost: "127.0.0.1" },
      ["dataDir"]
    ]
  ])("shows only what is in force: %s", async (_, env, expected, absent) => {
    const values = await loggedConfiguration(env)
    expect(values).toMatchObject(expected)
    for (const name of absent) expect(values, name).not.toHaveProperty(name)
  })

  /** The annotations of the `configuration` line a server process logs at start-up. */
  const loggedConfiguration = async (env: Record<string, string>) => {
    const server = spawnServer({ PORT: String(await freePort()), LOG_LEVEL: "Info", ...env })
    try {
      const configuration = () =>
        server.output().split("\n").filter((line) => line.startsWith("{")).map((line) =>
          JSON.parse(line) as {
            message: string
            annotations: Record<string, unknown>
          }
        ).find((line) => line.message === "configuration")
      expect(await eventually(() => configuration() !== undefined, 20_000), server.output()).toBe(true)
      return configuration()!.annotations
    } finally {
      await server.stop()
    }
  }
})
