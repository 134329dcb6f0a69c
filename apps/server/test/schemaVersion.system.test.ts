/**
 * The schema's version at start-up, read before anything is changed:
 * - newer than this server knows (a rolling upgrade: the new release's hosts
 *   migrated, this old one restarts): it serves, and its log names the versions;
 * - current with MIGRATE_ON_START=false: it serves, having changed nothing.
 * (Pending migrations, refused: packages/conformance/test/realServer.leastPrivilege.system.test.ts.)
 */
import postgres from "postgres"
import { afterEach, describe, expect, it } from "vitest"
import { createTestDatabase, postgresAdminUrl, startServerProcess, type TestDatabase } from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"

let database: TestDatabase | undefined
afterEach(async () => {
  await database?.drop()
  database = undefined
})

describe("the schema's version at start-up", needsPostgres, () => {
  it("newer than the server knows: it serves and warns; current with MIGRATE_ON_START=false: it serves", async () => {
    database = await createTestDatabase(postgresAdminUrl!)
    const first = await startServerProcess({ DATABASE_URL: database.url })
    await first.server.stop()
    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    try {
      await sql`INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_a_newer_release')`
    } finally {
      await sql.end()
    }
    const old = await startServerProcess({ DATABASE_URL: database.url, LOG_LEVEL: "Info", MIGRATE_ON_START: "false" })
    try {
      expect((await fetch(`${old.origin}/readyz`)).status).toBe(200)
      expect(old.server.output()).toMatch(
        /"message":"the schema is newer than this server: serving with it".*"unknownMigrations":"9999"/
      )
    } finally {
      await old.server.stop()
    }
  }, 120_000)
})
