import { describe } from "vitest"
import { pgbouncerBinary, startPgBouncer } from "@petstore/test-support"
import { postgresAdminUrl } from "./support/realServer.ts"
import { conformsOn } from "./support/realServerSuite.ts"

/**
 * The whole suite through a transaction-mode PgBouncer (Debian's `pgbouncer`,
 * on a free port) with DATABASE_DIRECT_URL beside it, as platform teams deploy
 * the server: statements unnamed, LISTEN and migrations on the direct URL.
 */
describe.runIf((postgresAdminUrl !== undefined && pgbouncerBinary() !== undefined) || process.env.CI === "true")(
  "the real server behind a transaction-mode PgBouncer conforms",
  () =>
    conformsOn("postgres", async (databaseUrl) => {
      const target = new URL(databaseUrl)
      const bouncer = await startPgBouncer({
        host: target.hostname,
        port: Number(target.port || 5432),
        users: [decodeURIComponent(target.username)],
        defaultPoolSize: 4
      })
      return {
        env: { DATABASE_URL: bouncer.through(databaseUrl), DATABASE_DIRECT_URL: databaseUrl },
        undo: bouncer.stop
      }
    })
)
