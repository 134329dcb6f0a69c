/**
 * What src/db/postgresInternals.ts relies on in postgres.js beyond its documented API, checked against the installed
 * postgres.js on a real PostgreSQL. Each failure names that module: an upgrade of postgres.js that changes one of
 * these breaks the answer watch, TLS per `sslmode`, or the closing of a timed-out statement's connection silently.
 */
import { postgresAdminUrl } from "@petstore/test-support"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import net from "node:net"
import { dirname, join } from "node:path"
import type { Duplex } from "node:stream"
import postgres from "postgres"
import { describe, expect, it } from "vitest"
import { Sessions, watchAnswers } from "../src/db/answerWatch.ts"
import {
  pipelineOption,
  POSTGRES_JS_VERSION,
  type PostgresSocketOptions,
  socketOption,
  statementSession,
  tapWrites
} from "../src/db/postgresInternals.ts"
import { needsPostgres } from "./support/databases.ts"

const broken = (what: string) =>
  `src/db/postgresInternals.ts was written for postgres.js ${POSTGRES_JS_VERSION} and no longer holds: ${what}`

const installedVersion = () => {
  let folder = dirname(createRequire(import.meta.url).resolve("postgres"))
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as {
        name?: string
        version?: string
      }
      if (manifest.name === "postgres") return manifest.version
    } catch {
      // No manifest here: the package's root is further up.
    }
    const parent = dirname(folder)
    if (parent === folder) return undefined
    folder = parent
  }
}

describe("the postgres.js version postgresInternals.ts was written for", () => {
  it("is the installed one, and the one apps/server/package.json pins exactly", () => {
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, "..", "package.json"), "utf8")) as {
      dependencies: Record<string, string>
    }
    expect(manifest.dependencies.postgres, broken("the pin in apps/server/package.json")).toBe(POSTGRES_JS_VERSION)
    expect(installedVersion(), broken("the installed version differs from the pinned one")).toBe(POSTGRES_JS_VERSION)
  })
})

describe("what postgresInternals.ts relies on in postgres.js", needsPostgres, () => {
  /**
   * A client whose one connection is made through the `socket` option, watched, with every chunk written seen,
   * and the wire's traffic in order: each chunk written, and each one read (`read`).
   */
  const open = (extra: {} = {}) => {
    const calls: Array<PostgresSocketOptions> = []
    const written: Array<Uint8Array> = []
    const traffic: Array<Uint8Array | "read"> = []
    const sessions = new Sessions()
    const url = new URL(postgresAdminUrl!)
    const sql = postgres(postgresAdminUrl!, {
      max: 1,
      onnotice: () => {},
      ssl: false,
      ...extra,
      ...socketOption(async (options) => {
        calls.push(options)
        const socket = net.connect({ host: options.host[0]!, port: options.port[0]! })
        await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject))
        tapWrites(socket as Duplex, (chunk) => {
          written.push(chunk)
          traffic.push(chunk)
        })
        socket.on("data", () => traffic.push("read"))
        return watchAnswers(socket as Duplex, 60_000, () => {}, sessions)
      })
    })
    return { sql, calls, written, traffic, sessions, url }
  }

  /** How many statements (Sync messages) the client wrote, from `from` in `traffic`, before it read anything. */
  const syncsBeforeAnAnswer = (traffic: ReadonlyArray<Uint8Array | "read">, from: number) => {
    const firstRead = traffic.indexOf("read", from)
    const bytes = Buffer.concat(traffic.slice(from, firstRead === -1 ? undefined : firstRead) as Array<Uint8Array>)
    let syncs = 0
    // Typed messages only: the untyped start-up message was written before `from`.
    for (let at = 0; at + 5 <= bytes.length; at += 1 + bytes.readInt32BE(at + 1)) {
      if (bytes[at] === 0x53) syncs++
    }
    return syncs
  }

  /** Three statements at once on the one connection, after it is open; how many were sent before an answer. */
  const sentBeforeAnAnswer = async (extra: {}) => {
    const { sql, traffic } = open(extra)
    try {
      await sql`SELECT 1`
      const from = traffic.length
      await Promise.all([1, 2, 3].map(() => sql`SELECT pg_sleep(0.05)`))
      return syncsBeforeAnAnswer(traffic, from)
    } finally {
      await sql.end({ timeout: 5 })
    }
  }

  it("calls the socket option for each connection with the URL's hosts and ports, and writes its bytes as Uint8Array chunks", async () => {
    const { calls, sql, url, written } = open()
    try {
      await sql`SELECT 1`
      expect(calls.length, broken("postgres.js did not call the `socket` option")).toBe(1)
      expect(calls[0]!.host, broken("the `socket` option's `host` array")).toEqual([url.hostname])
      expect(calls[0]!.port, broken("the `socket` option's `port` array")).toEqual([Number(url.port || 5432)])
      expect(written.length, broken("postgres.js wrote no Uint8Array chunk to the socket")).toBeGreaterThan(0)
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  it("sees the session key in BackendKeyData, and marks a statement it sent with the same pid and secret", async () => {
    const { sessions, sql } = open()
    try {
      const statement = sql`SELECT pg_backend_pid() AS pid`
      const [row] = await statement
      expect(sessions.size, broken("no BackendKeyData was seen on the watched socket")).toBe(1)
      const session = statementSession(statement)
      expect(session, broken("a sent statement has no `state.pid` and `state.secret`")).toBeDefined()
      expect(session!.pid, broken("a statement's `state.pid` is not its connection's backend pid")).toBe(row!.pid)
      // The key the statement carries is the one BackendKeyData filed: closing by it finds the connection.
      expect(sessions.close(session!.pid, session!.secret, "timed_out"), broken("`state.secret`")).toBe(true)
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  it("pipelines statements on a busy connection by default, and sends one at a time with max_pipeline 0", async () => {
    expect(await sentBeforeAnAnswer(pipelineOption(true)), broken("`max_pipeline` no longer pipelines")).toBe(3)
    expect(await sentBeforeAnAnswer(pipelineOption(false)), broken("`max_pipeline: 0` still pipelines")).toBe(1)
  })

  it("runs sql.begin on a pool of several connections that sends one statement at a time (the patch)", async () => {
    const sql = postgres(postgresAdminUrl!, { max: 2, onnotice: () => {}, ...pipelineOption(false) })
    try {
      const rows = await sql.begin((tx) => tx`SELECT 1 AS one`)
      expect(rows[0]?.one, broken("sql.begin with `max_pipeline: 0` (patches/postgres@3.4.9.patch)")).toBe(1)
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})
