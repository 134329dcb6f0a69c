import { afterAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  createKey,
  createTestDatabase,
  postgresAdminUrl,
  type ServerProcess,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"

const running: Array<ServerProcess> = []
const databases: Array<TestDatabase> = []

afterAll(async () => {
  await Promise.all(running.map((server) => server.stop()))
  await Promise.all(databases.map((database) => database.drop()))
})

/** Starts a server process, waits until it is ready, and stops it after the file. */
const start = async (env: Record<string, string>) => {
  const started = await startServerProcess(env)
  running.push(started.server)
  return started
}

/**
 * 300 concurrent requests from one free key, spread over the given origins.
 * Windows follow the wall clock: a burst that straddles a minute is sent again with a new key.
 */
const burst = async (origins: ReadonlyArray<string>, admin: string) => {
  for (let attempt = 0;; attempt++) {
    const { id, key } = await createKey(admin, "free")
    const answers = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) =>
          fetch(`${origins[i % origins.length]}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } }).then(
            async (response) => ({
              status: response.status,
              reset: response.headers.get("x-ratelimit-reset"),
              body: await response.text()
            })
          )
      )
    )
    const resets = new Set(answers.map((answer) => answer.reset))
    if (resets.size === 1 || attempt === 2) return Object.assign(answers, { keyId: id })
  }
}

describe("several server processes on one PostgreSQL database", needsPostgres, () => {
  it(
    "admit exactly a free key's 60 requests of 300 sent at once over two processes, and keep the daily count across a restart",
    async () => {
      const database = await createTestDatabase(postgresAdminUrl!)
      databases.push(database)
      const [a, b] = await Promise.all([start({ DATABASE_URL: database.url }), start({ DATABASE_URL: database.url })])
      const answers = await burst([a.origin, b.origin], a.admin)
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(60)
      expect(answers.filter((answer) => answer.status === 429)).toHaveLength(240)

      // The daily count lives in the database: a process started afterwards sees it.
      await Promise.all([a.server.stop(), b.server.stop()])
      const restarted = await start({ DATABASE_URL: database.url })
      const usage = await fetch(`${restarted.admin}/admin/keys/${answers.keyId}/usage`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
      })
      const body = (await usage.json()) as { day: { used: number } }
      expect(body.day.used).toBe(60)
    },
    120_000
  )

  it("WORKERS=2 serves one port from two processes with exact quotas", async () => {
    const database = await createTestDatabase(postgresAdminUrl!)
    databases.push(database)
    const { origin, admin } = await start({ DATABASE_URL: database.url, WORKERS: "2" })
    const answers = await burst([origin], admin)
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(60)
    expect(answers.filter((answer) => answer.status === 429)).toHaveLength(240)
  }, 120_000)
})
