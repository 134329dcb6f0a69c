import { Effect, Exit } from "effect"
import { Database } from "./Database.ts"
import { sql } from "./sql.ts"

/**
 * What `/readyz` asks of the database: which store it is, and whether it answers a trivial statement within two
 * seconds (never a failure: a database that does not answer is "not ready").
 */
export const databaseReadiness = Effect.map(Database, (db) => ({
  kind: db.kind,
  answers: db.query(sql`SELECT 1`).pipe(Effect.timeout("2 seconds"), Effect.exit, Effect.map(Exit.isSuccess))
}))
