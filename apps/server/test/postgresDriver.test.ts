import { eventually, postgresAdminUrl } from "@petstore/test-support"
import postgres from "postgres"
import { describe, expect, it } from "vitest"
import { connectionSettings } from "../src/db/connectionSettings.ts"
import { isUnavailable } from "../src/db/DatabaseError.ts"
import type { Driver } from "../src/db/Driver.ts"
import { postgresDriver, RECONNECT_DELAY_CAP_SECONDS, reconnectDelaySeconds } from "../src/db/postgresDriver.ts"
import { SERVICE_UNAVAILABLE_RETRY_SECONDS } from "../src/http/errors.ts"
import { needsPostgres } from "./support/databases.ts"
import { settings } from "./support/settings.ts"

describe("reconnecting to PostgreSQL after failed attempts", () => {
  it("waits no longer than the cap however long the outage was, so the pool is back within the Retry-After its 503s give", () => {
    expect(RECONNECT_DELAY_CAP_SECONDS).toBeLessThan(SERVICE_UNAVAILABLE_RETRY_SECONDS)
    for (const failures of [7, 10, 50, 1_000]) {
      for (let draw = 0; draw < 100; draw++) {
        const delay = reconnectDelaySeconds(failures)
        expect(delay).toBeGreaterThanOrEqual(RECONNECT_DELAY_CAP_SECONDS / 2)
        expect(delay).toBeLessThanOrEqual(RECONNECT_DELAY_CAP_SECONDS)
      }
    }
  })

  it("retries at once after the first failures, and spreads the processes' attempts", () => {
    const delays = Array.from({ length: 100 }, () => reconnectDelaySeconds(1))
    expect(Math.max(...delays)).toBeLessThanOrEqual(0.03)
    expect(new Set(delays).size).toBeGreaterThan(1)
  })
})

describe("a statement given up after its timeout (abandon)", needsPostgres, () => {
  const open = () => {
    const closed: Array<string> = []
    const driver = postgresDriver(connectionSettings("DATABASE_URL", settings.postgresUrl(postgresAdminUrl!)), {
      poolSize: 1,
      prepare: true,
      pipeline: true,
      silenceMillis: 60_000,
      onConnectionClosed: (reason) => closed.push(reason)
    })
    return { driver, closed }
  }
  const backendPid = async (driver: Driver) =>
    Number((await driver.query("SELECT pg_backend_pid() AS pid", []))[0]!.pid)

  it("closes the connection it was sent on, counted as timed_out, and the pool goes on with a new one", async () => {
    const { driver, closed } = open()
    try {
      const before = await backendPid(driver)
      const slow = driver.query("SELECT pg_sleep(30)", [])
      const outcome = slow.then(() => "answered", (error: unknown) => error)
      // Sent: PostgreSQL shows the statement running on that connection.
      await eventually(async () => (await stillRunning(before)) === true, 10_000, 20)
      driver.abandon(slow)
      expect(await outcome).toMatchObject({ code: "CONNECTION_CLOSED" })
      expect(closed).toEqual(["timed_out"])
      const after = await backendPid(driver)
      expect(after).not.toBe(before)
    } finally {
      await driver.close()
    }
  })

  it("leaves a statement that was never sent to run, and keeps the connection it waits for", async () => {
    const { driver, closed } = open()
    try {
      const pid = await backendPid(driver)
      // The one connection is busy with a statement it has not prepared yet (postgres.js sends nothing behind
      // one), so the next waits in postgres.js's queue. Statements start when awaited, as the server's do.
      const busy = driver.query("SELECT pg_sleep(0.5)", []).then(() => "answered")
      const queued = driver.query("SELECT pg_backend_pid() AS pid", [])
      const outcome = queued.then((rows) => Number(rows[0]!.pid))
      driver.abandon(queued)
      expect(await busy).toBe("answered")
      expect(await outcome).toBe(pid)
      expect(closed).toEqual([])
    } finally {
      await driver.close()
    }
  })
})

/**
 * A session lost under its statement, on the driver as the server opens it (postgres.js, patched: see
 * `patches/postgres@3.4.9.patch`). Unpatched, with several hosts in the URL (a failover set-up), postgres.js
 * kept the statement of a session it had just opened pending when the connection went away, and resolved it
 * with an empty result once the next session was up: a write "succeeded" with no row, a 500 among the 503s
 * of the failover test. And on any URL, the error a session ended with was handed to the next session's first
 * statement.
 */
describe("a session lost under its statement", needsPostgres, () => {
  const open = (url: string) =>
    postgresDriver(connectionSettings("DATABASE_URL", settings.postgresUrl(url)), {
      poolSize: 1,
      prepare: true,
      pipeline: true,
      silenceMillis: 60_000,
      onConnectionClosed: () => {}
    })
  /** The admin URL naming its host twice, as a failover URL names a primary and a standby. */
  const twoHostUrl = () => {
    const url = new URL(postgresAdminUrl!)
    const host = `${url.hostname}:${url.port || "5432"}`
    return postgresAdminUrl!.replace(url.host, `${host},${host}`)
  }
  /** The first statement of the driver's one (new) session, left running; its backend once PostgreSQL shows it. */
  const startFirstStatement = async (driver: Driver) => {
    const marker = `lost-session-${process.pid}-${Math.random().toString(36).slice(2)}`
    const statement = driver.query(`SELECT pg_sleep(30), '${marker}' AS marker`, [])
    const outcome = statement.then((rows) => ({ rows }), (error: unknown) => ({ error }))
    let pid: number | undefined
    await eventually(async () => (pid = await runningPid(marker)) !== undefined, 10_000, 20)
    return { statement, outcome, pid: pid! }
  }

  it("with several hosts, the first statement of a new session fails as an outage, never answered with no rows", async () => {
    const driver = open(twoHostUrl())
    try {
      const first = await startFirstStatement(driver)
      // Its connection closes under it, as a crashed primary's does (closed by the driver here: the statement timed out).
      driver.abandon(first.statement)
      // Sent at once (postgres.js sends a statement when it is awaited), as the server's other requests are.
      const next = driver.query("SELECT 1 AS one", []).then((rows) => rows)
      const settled = await first.outcome
      expect(settled, "answered, with no rows, by the next session").not.toHaveProperty("rows")
      expect(isUnavailable((settled as { error: unknown }).error)).toBe(true)
      expect(await next).toEqual([{ one: 1 }])
    } finally {
      await driver.close()
    }
  })

  it("the statement after a terminated session runs on the new one, not refused with the old session's error", async () => {
    const driver = open(postgresAdminUrl!)
    try {
      const first = await startFirstStatement(driver)
      await terminate(first.pid)
      const settled = await first.outcome
      expect(isUnavailable((settled as { error: unknown }).error)).toBe(true)
      expect(await driver.query("SELECT 1 AS one", [])).toEqual([{ one: 1 }])
    } finally {
      await driver.close()
    }
  })
})

/** The backend running the statement that contains `marker`, read on a connection of its own. */
const runningPid = async (marker: string) => {
  const sql = postgres(postgresAdminUrl!, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<Array<{ pid: number }>>`
      SELECT pid FROM pg_stat_activity
      WHERE state = 'active' AND pid <> pg_backend_pid() AND position(${marker} in query) > 0`
    return rows[0]?.pid
  } finally {
    await sql.end()
  }
}

/** Ends the backend `pid` as an administrator does (PostgreSQL sends it a FATAL 57P01 and closes it). */
const terminate = async (pid: number) => {
  const sql = postgres(postgresAdminUrl!, { max: 1, onnotice: () => {} })
  try {
    await sql`SELECT pg_terminate_backend(${pid})`
  } finally {
    await sql.end()
  }
}

/** Whether the backend `pid` is running a statement now, read on a connection of its own. */
const stillRunning = async (pid: number) => {
  const sql = postgres(postgresAdminUrl!, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<
      Array<{ active: boolean }>
    >`SELECT state = 'active' AS active FROM pg_stat_activity WHERE pid = ${pid}`
    return rows[0]?.active === true
  } finally {
    await sql.end()
  }
}
