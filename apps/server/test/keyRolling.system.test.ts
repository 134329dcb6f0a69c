/**
 * Rolling a key across a fleet: two server processes on one PostgreSQL
 * database, each with its own key cache. After a roll on one of them, the old
 * secret works on both until the overlap ends, then is refused on both within
 * the revocation bound (README "Rolling a key"). The overlap runs on real time:
 * the waits are generous and nothing is asserted about how long anything took.
 */
import { setTimeout as sleep } from "node:timers/promises"
import { afterAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  bearer,
  createTestDatabase,
  postgresAdminUrl,
  send,
  type StartedProcess,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"

const OVERLAP_SECONDS = 5

const running: Array<StartedProcess> = []
let database: TestDatabase | undefined
afterAll(async () => {
  await Promise.all(running.splice(0).map((started) => started.server.stop()))
  await database?.drop()
}, 60_000)

describe("rolling a key, seen by two server processes", needsPostgres, () => {
  it("the old secret works on both until the overlap ends, then is refused on both", async () => {
    database = await createTestDatabase(postgresAdminUrl!)
    for (let i = 0; i < 2; i++) running.push(await startServerProcess({ DATABASE_URL: database.url }, 60_000))
    const [first, second] = running as [StartedProcess, StartedProcess]
    const status = async (started: StartedProcess, key: string) =>
      (await send(`${started.origin}/v1/pets`, { headers: bearer(key) })).status

    const { id, key: old } = await first.createKeyWithId("pro")
    // Both processes look the old secret up and cache it before the roll.
    expect(await status(first, old)).toBe(200)
    expect(await status(second, old)).toBe(200)

    const rolled = await send(`${second.admin}/admin/keys/${id}/roll`, {
      method: "POST",
      headers: { ...bearer(ADMIN_TOKEN), "content-type": "application/json" },
      body: JSON.stringify({ overlapSeconds: OVERLAP_SECONDS })
    })
    expect(rolled.status).toBe(200)
    const overlapEnds = Date.parse(rolled.body.previousKeyExpiresAt)
    const fresh: string = rolled.body.key

    // Checked only while the overlap surely lasts: a slow machine may spend it on the requests themselves.
    for (const started of [first, second]) {
      expect(await status(started, fresh)).toBe(200)
      const answer = await status(started, old)
      if (Date.now() < overlapEnds - 500) expect(answer).toBe(200)
    }

    await sleep(Math.max(0, overlapEnds - Date.now()) + 4_000 + 1_000)
    for (const started of [first, second]) {
      const refused = await send(`${started.origin}/v1/pets`, { headers: bearer(old) })
      expect(refused.status).toBe(401)
      expect(refused.headers.get("www-authenticate")).toContain(`error="invalid_token"`)
      expect(await status(started, fresh)).toBe(200)
    }
  }, 180_000)
})
