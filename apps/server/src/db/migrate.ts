import type { Driver } from "./Driver.ts"
import { migrations } from "./migrations/index.ts"

/** Any number of server processes may start at once: this lock lets one of them migrate at a time. */
const MIGRATION_LOCK_KEY = 7_305_481_121

/**
 * Applies every migration not yet recorded in `schema_migrations`, in one
 * transaction that holds an advisory lock. Returns the ones it applied, as
 * `<version>_<name>`.
 */
export const migrate = (driver: Driver) =>
  driver.transaction(async (query) => {
    await query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY])
    await query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
      []
    )
    const applied = new Set((await query("SELECT version FROM schema_migrations", [])).map((row) => row.version))
    const pending = migrations.filter((migration) => !applied.has(migration.version))
    for (const migration of pending) {
      for (const statement of migration.statements) await query(statement, [])
      await query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [migration.version, migration.name])
    }
    return pending.map((migration) => `${migration.version}_${migration.name}`)
  })
