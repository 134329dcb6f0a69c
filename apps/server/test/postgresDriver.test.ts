import { eventually, postgresAdminUrl } from "@petstore/test-support"
import postgres from "postgres"
import { describe, expect, it } from "vitest"
import { connectionSettings } from "../src/db/connectionSettings.ts"
import type { Driver } from "../src/db/Driver.ts"
import { postgresDriver, RECONNECT_DELAY_CAP_SECONDS, reconnectDelaySeconds } from "../src/db/postgresDriver.ts"
import { SERVICE_UNAVAILABLE_RETRY_SECONDS } from "../src/http/errors.ts"
import { needsPostgres } from "./support/databases.ts"

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
    const driver = postgresDriver(connectionSettings("DATABASE_URL", postgresAdminUrl!), {
      poolSize: 1,
      prepare: true,
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
