import { spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import { AppConfig } from "../src/config.ts"
import { FIRST_CONNECTION_DEADLINE_SECONDS } from "../src/quota/redis/redisConnection.ts"
import { StartupError } from "../src/startupError.ts"
import { ServerLive } from "../src/server.ts"
import {
  freePort,
  postgresAdminUrl,
  serverEntry,
  type ServerProcess,
  spawnServer,
  waitForExit,
  waitUntilReady
} from "@petstore/test-support"
import { freshPgliteFolder, freshUnmigratedPgliteFolder } from "./support/databaseTemplates.ts"

const scratch = mkdtempSync(join(tmpdir(), "petstore-startup-failures-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Starts the real server process and waits for it to stop by itself. */
const start = (env: Record<string, string>) =>
  spawnSync(process.execPath, [serverEntry()], {
    env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", ...env },
    encoding: "utf8",
    timeout: 120_000
  })

/** Exit 1 and one line on stderr, `petstore: cannot start: …`, and no stack trace anywhere. */
const expectOneLineFailure = (result: ReturnType<typeof start>) => {
  expect(result.status, result.stderr).toBe(1)
  const lines = result.stderr.trimEnd().split("\n")
  expect(lines).toHaveLength(1)
  expect(`${result.stdout}${result.stderr}`).not.toMatch(/\n\s+at /)
  return lines[0]!
}

describe("a server that cannot start stops with one line naming the cause", () => {
  let occupied: Server
  let busyPort: number

  beforeAll(async () => {
    occupied = createServer().listen(0, "127.0.0.1")
    await once(occupied, "listening")
    busyPort = (occupied.address() as { port: number }).port
  })
  afterAll(() => occupied?.close())

  it("PORT in use: said before the database is opened", async () => {
    const dataDir = join(scratch, "port-in-use")
    const line = expectOneLineFailure(start({ PORT: String(busyPort), DATA_DIR: dataDir }))
    expect(line).toBe(`petstore: cannot start: PORT: 127.0.0.1:${busyPort} is already in use`)
    // PGlite creates DATA_DIR when it opens: it never did.
    expect(existsSync(dataDir)).toBe(false)
  })

  it("ADMIN_PORT in use", async () => {
    const dataDir = join(scratch, "admin-port-in-use")
    const line = expectOneLineFailure(start({
      PORT: String(await freePort()),
      ADMIN_PORT: String(busyPort),
      ADMIN_TOKEN: "test-admin-token-not-a-secret",
      DATA_DIR: dataDir
    }))
    expect(line).toBe(`petstore: cannot start: ADMIN_PORT: 127.0.0.1:${busyPort} is already in use`)
    expect(existsSync(dataDir)).toBe(false)
  })

  it("ADMIN_PORT equal to PORT: said before the database is opened", async () => {
    const dataDir = join(scratch, "same-ports")
    const port = String(await freePort())
    const line = expectOneLineFailure(start({
      PORT: port,
      ADMIN_PORT: port,
      ADMIN_HOST: "127.0.0.1",
      ADMIN_TOKEN: "test-admin-token-not-a-secret",
      DATA_DIR: dataDir
    }))
    expect(line).toBe(`petstore: cannot start: ADMIN_PORT: 127.0.0.1:${port} is already in use`)
    expect(existsSync(dataDir)).toBe(false)
  })

  it("a port taken between the check and the listen fails the same way, not as an empty ServeError", async () => {
    // In-process, where nothing checks the ports first: the listen itself meets the busy port.
    const folder = freshPgliteFolder()
    onTestFinished(folder.remove)
    const config = AppConfig.layerWith({
      host: "127.0.0.1",
      port: busyPort,
      adminToken: Option.none(),
      metricsPublic: false,
      databaseUrl: Option.none(),
      dataDir: folder.dataDir,
      logLevel: "None"
    })
    const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(ServerLive.pipe(Layer.provide(config)))))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
    expect(error).toBeInstanceOf(StartupError)
    expect((error as StartupError).message).toBe(`PORT: 127.0.0.1:${busyPort} is already in use`)
  })

  it("DATA_DIR that is a file", async () => {
    const file = join(scratch, "a-file")
    writeFileSync(file, "not a directory")
    const line = expectOneLineFailure(start({ PORT: String(await freePort()), DATA_DIR: file }))
    expect(line).toBe(`petstore: cannot start: DATA_DIR (${file}): not a directory`)
  })

  it("DATA_DIR whose parent does not exist", async () => {
    const dataDir = join(scratch, "missing", "data")
    const line = expectOneLineFailure(start({ PORT: String(await freePort()), DATA_DIR: dataDir }))
    expect(line).toBe(`petstore: cannot start: DATA_DIR (${dataDir}): its parent directory does not exist`)
  })

  it(
    "pending migrations with MIGRATE_ON_START=false name the migrate command as it runs in a checkout and in the image",
    async () => {
      // An embedded database as its first start leaves it, before any migration, copied: running initdb here took
      // over 120 s at load 20 (the process's hang guard), and it is not what this test is about.
      const folder = freshUnmigratedPgliteFolder()
      onTestFinished(folder.remove)
      const line = expectOneLineFailure(
        start({ PORT: String(await freePort()), DATA_DIR: folder.dataDir, MIGRATE_ON_START: "false" })
      )
      expect(line).toMatch(
        /^petstore: cannot start: migration \d{4}_\w+ and \d+ more pending, and MIGRATE_ON_START=false: apply it with `pnpm migrate` \(in the server image: `node dist\/main\.js migrate`\) first$/
      )
      // The image's /app is this package deployed (`pnpm deploy`, deploy/images/Containerfile), run from there:
      // the path the line names must be this package's entry point (after the Node flags the image ships), and the
      // root script the one it names.
      const inImage = /in the server image: `node (\S+) migrate`/.exec(line)![1]!
      const packageRoot = fileURLToPath(new URL("../", import.meta.url))
      expect(existsSync(join(packageRoot, inImage)), inImage).toBe(true)
      expect(readFileSync(join(packageRoot, "../../deploy/images/Containerfile"), "utf8")).toMatch(
        /WORKDIR \/app\n[\s\S]*ENTRYPOINT \["node", (?:"--[^"]+", )*"dist\/main\.js"\]/
      )
      const rootScripts = JSON.parse(readFileSync(join(packageRoot, "../../package.json"), "utf8")).scripts
      expect(rootScripts.migrate).toMatch(/\bapps\/server\b.*\bdist\/main\.js migrate$/)
    },
    150_000
  )

  it("DATABASE_URL where nothing listens, without showing its password", async () => {
    const port = await freePort()
    const result = start({
      PORT: String(await freePort()),
      DATABASE_URL: `postgres://petstore:not-the-real-password@127.0.0.1:${port}/petstore`
    })
    const line = expectOneLineFailure(result)
    expect(line).toBe(
      `petstore: cannot start: DATABASE_URL (127.0.0.1:${port}/petstore): connection refused: is PostgreSQL running there?`
    )
    expect(`${result.stdout}${result.stderr}`).not.toContain("not-the-real-password")
  })

  /** A server that accepts connections and never answers, closed with the test. */
  const silentServer = async () => {
    const held: Array<Socket> = []
    const silent = createServer((socket) => void held.push(socket)).listen(0, "127.0.0.1")
    await once(silent, "listening")
    onTestFinished(() => {
      for (const socket of held) socket.destroy()
      silent.close()
    })
    return (silent.address() as { port: number }).port
  }

  /** As `start`, but spawned: a silent server in this process must be able to accept while the server runs. */
  const startBeside = async (env: Record<string, string>) => {
    const child = spawn(process.execPath, [serverEntry()], {
      env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", PORT: String(await freePort()), ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    onTestFinished(() => void child.kill("SIGKILL"))
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const [status] = await once(child, "close")
    return { status, stdout, stderr } as ReturnType<typeof start>
  }

  it("QUOTA_STORE=redis with a Redis nobody listens on: said while the database is still being reached", async () => {
    // A PostgreSQL that accepts connections and never answers: the database's start-up cannot finish, nor fail
    // before its connect timeout (then with a line naming DATABASE_URL). The Redis line can only come first if
    // Redis is connected beside the database rather than after it.
    const databasePort = await silentServer()
    const redisPort = await freePort()
    const line = expectOneLineFailure(
      await startBeside({
        DATABASE_URL: `postgres://petstore@127.0.0.1:${databasePort}/petstore`,
        QUOTA_STORE: "redis",
        REDIS_URL: `redis://127.0.0.1:${redisPort}`
      })
    )
    expect(line).toBe(
      `petstore: cannot start: REDIS_URL (127.0.0.1:${redisPort}): cannot reach Redis: connection refused: is Redis running there?`
    )
  }, 60_000)

  it(
    "QUOTA_STORE=redis with a Redis that never answers: a database nobody listens on is said, not waited behind Redis",
    async () => {
      // Redis's connect, begun beside the database's, is interrupted when the database fails: a Redis that accepts
      // and stays silent would otherwise hold the start-up (its client waits for an answer without a deadline).
      const redisPort = await silentServer()
      const databasePort = await freePort()
      const line = expectOneLineFailure(
        await startBeside({
          DATABASE_URL: `postgres://petstore@127.0.0.1:${databasePort}/petstore`,
          QUOTA_STORE: "redis",
          REDIS_URL: `redis://127.0.0.1:${redisPort}`
        })
      )
      expect(line).toBe(
        `petstore: cannot start: DATABASE_URL (127.0.0.1:${databasePort}/petstore): connection refused: is PostgreSQL running there?`
      )
    },
    60_000
  )

  it(
    "QUOTA_STORE=redis with a Redis that accepts and never answers: said at the first connection's deadline",
    async () => {
      // The client's connect timeout covers only the socket; its handshake (HELLO) waits without one. The database
      // (a migrated PGlite) opens, so only Redis's own deadline can end this start-up.
      const redisPort = await silentServer()
      const folder = freshPgliteFolder()
      onTestFinished(folder.remove)
      const line = expectOneLineFailure(
        await startBeside({
          DATA_DIR: folder.dataDir,
          QUOTA_STORE: "redis",
          REDIS_URL: `redis://127.0.0.1:${redisPort}`
        })
      )
      expect(line).toBe(
        `petstore: cannot start: REDIS_URL (127.0.0.1:${redisPort}): connected, but no answer to the handshake within ` +
          `${FIRST_CONNECTION_DEADLINE_SECONDS} s: is a Redis server listening there?`
      )
    },
    120_000
  )

  describe.runIf(postgresAdminUrl !== undefined)("on PostgreSQL", () => {
    const urlWith = (change: (url: URL) => void) => {
      const url = new URL(postgresAdminUrl!)
      change(url)
      return url.toString()
    }

    it("DATABASE_URL naming a database that does not exist", async () => {
      const url = urlWith((url) => (url.pathname = "/petstore_no_such_database"))
      const line = expectOneLineFailure(start({ PORT: String(await freePort()), DATABASE_URL: url }))
      expect(line).toMatch(/^petstore: cannot start: DATABASE_URL \([^)]*\/petstore_no_such_database\): /)
      expect(line).toMatch(/database "petstore_no_such_database" does not exist$/)
    })

    it("DATABASE_URL naming a role that does not exist", async () => {
      const url = urlWith((url) => (url.username = "petstore_no_such_role"))
      const line = expectOneLineFailure(start({ PORT: String(await freePort()), DATABASE_URL: url }))
      // Under password authentication PostgreSQL does not say whether the role exists.
      expect(line).toMatch(
        /^petstore: cannot start: DATABASE_URL \([^)]*\): (role "petstore_no_such_role" does not exist|password authentication failed for user "petstore_no_such_role")$/
      )
    })
  })
})

describe("a PGlite folder is used by one server at a time", () => {
  const dataDir = join(scratch, "shared")
  let first: ServerProcess | undefined
  afterAll(() => first?.stop())

  /** The messages of the JSON log lines a server wrote, in order. */
  const logMessages = (server: ServerProcess) =>
    server.output().split("\n").filter((line) => line.startsWith("{")).map((line) =>
      (JSON.parse(line) as { message: string }).message
    )

  const startServing = async () => {
    const port = await freePort()
    const server = spawnServer({ PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "Info" })
    // A hang guard: opening PGlite took over a minute with the machine busy.
    await waitUntilReady(server, `http://127.0.0.1:${port}/healthz`, 240_000)
    return { server, port }
  }

  it("the first start says it is creating the embedded database before it does", async () => {
    const started = await startServing()
    first = started.server
    const messages = logMessages(first)
    const creating = messages.indexOf("creating the embedded database (PGlite); the first start takes a while")
    expect(creating, first.output()).toBeGreaterThanOrEqual(0)
    expect(creating).toBeLessThan(messages.indexOf("database ready"))
  }, 300_000)

  it(
    "a second server on the folder stops with one line: another process holds it, and what chooses another",
    async () => {
      const line = expectOneLineFailure(start({ PORT: String(await freePort()), DATA_DIR: dataDir }))
      expect(line).toBe(
        `petstore: cannot start: DATA_DIR (${dataDir}): another process holds this folder (a server already running ` +
          "on it?): stop it, or set DATA_DIR to another folder, or DATABASE_URL to use PostgreSQL instead"
      )
    },
    300_000
  )

  it("a server killed without shutting down leaves no lock behind: the next one opens the folder", async () => {
    first!.child.kill("SIGKILL")
    expect(await waitForExit(first!.child, 30_000)).toBeDefined()
    const next = await startServing()
    try {
      expect(logMessages(next.server)).toContain("opening the embedded database (PGlite)")
      expect((await fetch(`http://127.0.0.1:${next.port}/healthz`)).status).toBe(200)
    } finally {
      await next.server.stop()
    }
  }, 300_000)
})
