import { postgresAdminUrl } from "@petstore/test-support"
import postgres from "postgres"
import type { Backend } from "./databases.ts"

/**
 * The transactions that can still hold back what a test has just committed: events are listed once every older
 * transaction has ended, in any database of the cluster (Events.ts, `pg_snapshot_xmin`). On a shared PostgreSQL
 * that is another suite's or another checkout's transaction, which may stay open for minutes on a loaded machine
 * (a statement waits up to 60 s in the pooler and orders suites): no fixed number of polls outwaits it. A test
 * that waits for its events waits while one of these is open, and counts its bounded polls only after.
 *
 * Taken after the write has committed. On PGlite only the server's own transactions exist, short and in the
 * same process: nothing outside the test's bound holds events back there.
 */
export interface HeldBack {
  /** Whether a transaction open when this was taken is still open. */
  readonly stillOpen: () => Promise<boolean>
  readonly end: () => Promise<void>
}

export const transactionsOpenNow = async (backend: Backend): Promise<HeldBack> => {
  if (backend === "pglite" || postgresAdminUrl === undefined) {
    return { stillOpen: () => Promise.resolve(false), end: () => Promise.resolve() }
  }
  const sql = postgres(postgresAdminUrl, { max: 1, onnotice: () => {} })
  // This statement's own transaction takes no transaction id, so it is not among them.
  let open = (await sql<Array<{ xid: string }>>`SELECT pg_snapshot_xip(pg_current_snapshot())::text AS xid`)
    .map((row) => row.xid)
  return {
    stillOpen: async () => {
      if (open.length === 0) return false
      open = (await sql<Array<{ xid: string }>>`
        SELECT x::text AS xid FROM unnest(${open}::text[]::xid8[]) AS x WHERE pg_xact_status(x) = 'in progress'`)
        .map((row) => row.xid)
      return open.length > 0
    },
    end: () => sql.end()
  }
}
