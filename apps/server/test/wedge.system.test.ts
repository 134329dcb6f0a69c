/**
 * No wedged connection: an answer PostgreSQL sent that never reaches the
 * server, on a connection that stays open (a proxy or a network that swallowed
 * it). postgres.js alone would keep that connection, and every statement
 * queued behind the lost answer, forever. The server closes a connection that
 * owes an answer and has been silent for the query timeout (or carries a
 * statement that timed out: two 5 s clocks, whichever ends first), counts it in
 * `database_connections_closed_total{reason="silent"|"timed_out"}`, and serves again by
 * itself, whichever answer was swallowed: a statement's, a new connection's
 * start-up, or the answer to its TLS request. (A pooler that desynchronises is in pooler.system.test.ts: PgBouncer
 * in transaction mode with named prepared statements.)
 */
import { describe, expect, it } from "vitest"
import { ADMIN_TOKEN, eventually, json, send, startServerProcess } from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"
import { freshDatabaseBehindProxy } from "./support/tcpProxy.ts"
import { undoAfterEach } from "./support/undo.ts"

const cleanup = undoAfterEach()

const closedForSilence = async (admin: string) => {
  const text = await (await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text()
  return text.split("\n")
    .filter((entry) =>
      entry.startsWith("database_connections_closed_total{") && /reason="(silent|timed_out)"/.test(entry)
    )
    .reduce((sum, entry) => sum + Number(entry.split(" ").at(-1)), 0)
}

/** A server process, stopped after the test, and a list request with an unlimited key (0: no answer). */
const serverWithKey = async (env: Record<string, string>) => {
  const started = await startServerProcess(env)
  cleanup.push(() => started.server.stop())
  const key = await started.createKey("enterprise", { perMinute: 1_000_000, perDay: 10_000_000 })
  // A hang guard, not a judgement of speed: an answer owed past the 5 s statement timeout is a hang, and on a
  // loaded machine many requests at once can queue for CPU well beyond that before they are answered.
  const list = () =>
    send(`${started.origin}/v1/pets?limit=5`, { headers: json(key), signal: AbortSignal.timeout(60_000) })
      .catch((error) => ({ status: 0, text: String(error) }))
  return { list, started }
}

describe("a connection whose answer was swallowed", needsPostgres, () => {
  it("is closed after the query timeout and replaced: the server serves again without a restart", async () => {
    const { proxy, url } = await freshDatabaseBehindProxy(cleanup)
    const { list, started } = await serverWithKey({ DATABASE_URL: url })
    expect((await list()).status).toBe(200)
    const pid = started.server.child.pid

    proxy.swallowNextAnswer()
    // Enough concurrent statements that some queue behind the lost answer.
    const during = await Promise.all(Array.from({ length: 40 }, list))
    // Each is answered (200, or 503 for those behind the lost answer), none hangs.
    expect(
      during.every((answer) => answer.status === 200 || answer.status === 503),
      JSON.stringify(during.map((a) => a.status))
    ).toBe(true)

    let last = ""
    const serves = await eventually(
      async () => {
        const answers = await Promise.all(Array.from({ length: 20 }, list))
        last = answers.map((answer) => `${answer.status} ${answer.text.slice(0, 100)}`).join("\n")
        return answers.every((answer) => answer.status === 200)
      },
      30_000,
      200
    )
    const metrics =
      (await (await fetch(`${started.admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text())
        .split("\n").filter((line) => line.startsWith("database_")).join("\n")
    const { execSync } = await import("node:child_process")
    const sockets = execSync(`ss -tnpo | grep ${proxy.port} | grep -v "${proxy.port} *users" || true`).toString()
    expect(serves, `${last}\n${metrics}\n${sockets}\n${started.server.output().slice(-1_000)}`).toBe(true)
    expect(await closedForSilence(started.admin)).toBeGreaterThanOrEqual(1)
    expect(started.server.child.pid).toBe(pid)
    expect(started.server.child.exitCode).toBeNull()
  }, 300_000)

  it("a new connection's start-up answer: closed at the connect timeout, counted as silent, replaced", async () => {
    // A statement timeout well above the connect timeout: the start-up is bounded by the latter (5 s), and the
    // close is the server's, counted, not postgres.js's own connect timeout (which closed it uncounted).
    const { proxy, url } = await freshDatabaseBehindProxy(cleanup)
    // Without TLS: a new connection's first message is then its start-up, not the TLS request (whose lost answer
    // the connect's own timeout has always closed and counted).
    const plain = new URL(url)
    plain.searchParams.set("sslmode", "disable")
    const { list, started } = await serverWithKey({ DATABASE_URL: plain.toString(), DATABASE_STATEMENT_TIMEOUT: "30" })
    expect((await list()).status).toBe(200)
    expect(await closedForSilence(started.admin)).toBe(0)

    // Every connection dropped, as a crashed host's: the first bytes the proxy then carries are a new
    // connection's start-up message, and its answer is the one swallowed.
    proxy.swallowNextAnswer()
    proxy.dropConnections()
    expect(await eventually(async () => (await list()).status === 200, 60_000, 200)).toBe(true)
    expect(await eventually(async () => (await closedForSilence(started.admin)) >= 1, 30_000, 200)).toBe(true)
    expect(started.server.child.exitCode).toBeNull()
  }, 180_000)
})
