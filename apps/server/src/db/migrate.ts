import type { Driver } from "./Driver.ts"
import { type Migration, migrations } from "./migrations/index.ts"

/** Any number of server processes may start at once: this lock lets one of them migrate at a time. */
const MIGRATION_LOCK_KEY = 7_305_481_121

/** The newest migration this server knows. */
export const knownVersion = migrations[migrations.length - 1]!.version

export const migrationName = (migration: Migration) => `${String(migration.version).padStart(4, "0")}_${migration.name}`

export interface SchemaState {
  /** Known migrations not yet applied, oldest first. */
  readonly pending: ReadonlyArray<Migration>
  /** Versions applied that this server does not know: a newer release migrated (a rolling upgrade's old hosts). */
  readonly unknown: ReadonlyArray<number>
}

/**
 * Which migrations the database lacks, read with nothing beyond SELECT on
 * `schema_migrations` (a fresh database has no such table: all are pending).
 */
export const readSchemaState = async (driver: Driver): Promise<SchemaState> => {
  const [table] = await driver.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present", [])
  const applied = table?.present === true
    ? new Set((await driver.query("SELECT version FROM schema_migrations", [])).map((row) => Number(row.version)))
    : new Set<number>()
  const known = new Set(migrations.map((migration) => migration.version))
  return {
    pending: migrations.filter((migration) => !applied.has(migration.version)),
    unknown: [...applied].filter((version) => !known.has(version)).sort((a, b) => a - b)
  }
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in one
 * transaction that holds an advisory lock (a transaction's lock: it works
 * through a transaction pooler too). Returns the ones it applied, as
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
