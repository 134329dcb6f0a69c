/**
 * Connections to PostgreSQL lost under their statements, again and again, on a URL naming several hosts (as a
 * failover URL does). Each write is answered 201, or 503 with Retry-After while its statement's connection is
 * lost. postgres.js unpatched (see `patches/postgres@3.4.9.patch`) answered the first statement of a connection
 * it had just opened with no rows once the next connection was up, when that connection was lost under it: a
 * key's lookup found nothing (401 for a key that exists), a batch of pets or quota admissions was completed with
 * nothing (500: the failover test saw them after the primary crashed). A cut between a new connection's TLS
 * request and its answer lost the pool that connection for good, now and then all of them: no write for a minute
 * after the cuts (`connections.test.ts` holds the cause).
 */
import { describe, expect, it } from "vitest"
import { eventually, json, send, startServerProcess } from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"
import { freshDatabaseBehindProxy } from "./support/tcpProxy.ts"
import { undoAfterEach } from "./support/undo.ts"

const cleanup = undoAfterEach()

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

describe("connections lost under their statements, on a URL with several hosts", needsPostgres, () => {
  it("every write is answered 201 or 503 (never 500, never 401 for its live key), and writes go on once connections stay", async () => {
    const { proxy, url } = await freshDatabaseBehindProxy(cleanup)
    // The proxy named twice: postgres.js takes the URL for a failover set-up, as with a primary and a standby.
    const through = new URL(url)
    const twoHosts = url.replace(through.host, `${through.host},${through.host}`)
    const started = await startServerProcess({ DATABASE_URL: twoHosts })
    cleanup.push(() => started.server.stop())
    const key = await started.createKey("enterprise", { perMinute: 1_000_000, perDay: 10_000_000 })
    const write = () =>
      send(`${started.origin}/v1/pets`, {
        method: "POST",
        headers: json(key),
        body: JSON.stringify({ name: "Lost", categoryId: 1 }),
        signal: AbortSignal.timeout(60_000)
      }).catch((error: unknown) => ({ status: 0, headers: new Headers(), text: String(error) }))

    const statuses = new Map<number, number>()
    let retryAfterMissing = 0
    let running = true
    const writer = async () => {
      while (running) {
        const answer = await write()
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        if (answer.status === 503 && answer.headers.get("retry-after") === null) retryAfterMissing++
      }
    }
    const writers = Promise.all(Array.from({ length: 8 }, writer))
    // Cuts at uneven moments, so that some land while a new connection's first statement is in flight.
    for (let round = 0; round < 60; round++) {
      await sleep(20 + Math.floor(Math.random() * 200))
      proxy.dropConnections()
    }
    running = false
    await writers

    const summary = `statuses ${JSON.stringify([...statuses])}`
    console.info(summary)
    const failures = started.server.output().split("\n").filter((line) => /"level":"(ERROR|FATAL)"/.test(line))
    expect(
      [...statuses.keys()].filter((status) => status !== 201 && status !== 503),
      `${summary}\n${failures.slice(0, 5).join("\n")}`
    ).toEqual([])
    expect(retryAfterMissing, summary).toBe(0)
    expect(statuses.get(503) ?? 0, `${summary}: the cuts reached no statement`).toBeGreaterThan(0)
    let last: { status: number; text?: string } = { status: 0 }
    const wroteAgain = await eventually(async () => (last = await write()).status === 201, 60_000, 100)
    // Why writes did not come back, if they did not: the last answer, and what the server last logged of the database.
    const unavailable = started.server.output().split("\n").filter((line) => line.includes("database unavailable"))
    expect(
      wroteAgain,
      `${summary}; the last write: ${last.status} ${last.text ?? ""}\n${unavailable.slice(-3).join("\n")}`
    ).toBe(true)
  })
})
