/**
 * The database: PostgreSQL through postgres.js when `DATABASE_URL` is set,
 * otherwise PGlite, the embedded PostgreSQL, which runs the same SQL and the
 * same migrations. One concern a file:
 *
 * - `sql.ts`: how statements are written (the `sql` tag, arrays as parameters);
 * - `DatabaseError.ts`: the one failure of a statement, and whether it is an outage;
 * - `Driver.ts`, `postgresDriver.ts`, `pgliteDriver.ts`: the two engines behind one interface;
 * - `migrate.ts` and `migrations/`: the schema, migrated at start-up;
 * - `startupFailures.ts`: why the database cannot be opened, in an operator's words;
 * - `batch.ts`: what the resolvers that answer a whole batch with one statement share;
 * - this file: the `Database` service, which opens, migrates, times and times out.
 *
 * A table's SQL lives in the module of that table (`pets/Pets.ts`,
 * `auth/ApiKeys.ts`, `quota/QuotaStore.ts`, `idempotency/IdempotencyKeys.ts`).
 *
 * Why this layer and not `effect/sql` (effect 4.1 ships `SqlClient`,
 * `Migrator`, `SqlResolver` and `SqlError`), weighed piece by piece:
 *
 * - `SqlClient` needs a driver package, and none runs on postgres.js or PGlite:
 *   `@effect/sql-pg` 4 is a PostgreSQL wire-protocol client of its own (neither
 *   postgres.js nor `pg`), and no PGlite client exists for Effect 4. postgres.js
 *   and PGlite are part of the product's design, so adopting `SqlClient` means
 *   writing one: a `Connection` with six ways to execute, transactions, and the
 *   PostgreSQL statement compiler, which effect itself does not ship (only
 *   SQLite's) — more code than this directory's two drivers, for a `sql` tag we
 *   already have. It has no LISTEN either, which key revocation uses.
 * - `Migrator` records migrations in a table of its own (`effect_sql_migrations`,
 *   `migration_id`), applies only ids above the latest applied, and serialises
 *   processes with `LOCK TABLE`. Ours records `schema_migrations(version)` and
 *   applies every missing version under an advisory lock. Switching would re-run
 *   every migration on every existing database, or need a migration of the
 *   migrations table, and change nothing a user sees.
 * - `SqlError`'s `isRetryable` is not our `unavailable`. It calls deadlocks,
 *   serialization failures and lock timeouts (40P01, 40001, 55P03) retryable,
 *   which we answer 500, as bugs; and `@effect/sql-pg` files too many
 *   connections and a shutting-down or starting-up server (53300, 57P01, 57P03)
 *   as `UnknownError`, not retryable: exactly the outages we answer 503 with
 *   `Retry-After`. Adopting its reasons would change which requests get a 503.
 * - `SqlResolver` (`ordered`, `grouped`, `findById`) decodes every row with a
 *   Schema and adds `SchemaError`, `ResultLengthMismatch` or
 *   `NoSuchElementError` to every request's failures. Our resolvers send one
 *   statement a batch with arrays bound as single parameters, share a page
 *   among equal queries and complete each request by ordinal; they use
 *   `RequestResolver` directly, which is what `SqlResolver` is built on.
 *
 * So nothing of it is adopted; worth weighing again when a postgres.js or
 * PGlite `SqlClient` exists for Effect 4.
 */
import { Context, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { AppConfig } from "../config.ts"
import { measureQuery } from "../observability/metrics.ts"
import { DatabaseError, isOpenFailure, QueryTimeout } from "./DatabaseError.ts"
import type { Driver } from "./Driver.ts"
import { migrate } from "./migrate.ts"
import { pgliteDriver } from "./pgliteDriver.ts"
import { postgresDriver } from "./postgresDriver.ts"
import type { Statement } from "./sql.ts"
import { migrationsRefused, pgliteOpenFailure, postgresOpenFailure, prepareDataDir } from "./startupFailures.ts"

/** No request waits on the database longer than this; it gets a 503 instead. */
export const QUERY_TIMEOUT_MILLIS = 5_000

export class Database extends Context.Service<Database, {
  readonly kind: Driver["kind"]
  readonly query: <Row = Record<string, unknown>>(statement: Statement) => Effect.Effect<ReadonlyArray<Row>, DatabaseError>
  /** Runs `onNotify` for every NOTIFY on the channel, from any process, until the scope closes. */
  readonly listen: (
    channel: string,
    onNotify: (payload: string) => void
  ) => Effect.Effect<void, DatabaseError, Scope.Scope>
}>()("@petstore/server/db/Database") {
  /**
   * PostgreSQL when `DATABASE_URL` is set, otherwise PGlite under `DATA_DIR`.
   * The schema is migrated before the layer is ready.
   */
  static readonly layer = Layer.effect(
    Database,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const url = Option.map(config.databaseUrl, Redacted.value)
      const dataDir = config.dataDir === ":memory:" ? undefined : config.dataDir
      if (Option.isNone(url) && dataDir !== undefined) yield* prepareDataDir(dataDir)
      const driver = yield* Effect.acquireRelease(
        Effect.tryPromise({
          try: () =>
            Option.match(url, {
              onSome: (url) => Promise.resolve(postgresDriver(url)),
              onNone: () => pgliteDriver(dataDir)
            }),
          catch: (cause) => pgliteOpenFailure(config.dataDir, cause)
        }),
        (driver) => Effect.promise(() => driver.close().catch(() => undefined))
      )
      // postgres.js connects on the first statement: a database that cannot be reached or entered fails here.
      const applied = yield* Effect.tryPromise({
        try: () => migrate(driver),
        catch: (cause) =>
          Option.isSome(url) && isOpenFailure(cause) ? postgresOpenFailure(url.value, cause) : migrationsRefused(cause)
      })
      yield* Effect.logInfo("database ready").pipe(
        Effect.annotateLogs({ store: driver.kind, migrationsApplied: applied.join(",") || "none" })
      )
      return Database.of({
        kind: driver.kind,
        query: <Row>(statement: Statement) =>
          measureQuery(Effect.tryPromise({
            try: () => driver.query(statement.text, statement.values) as Promise<ReadonlyArray<Row>>,
            catch: (cause) => new DatabaseError({ cause })
          })).pipe(
            Effect.timeoutOrElse({
              duration: QUERY_TIMEOUT_MILLIS,
              orElse: () => Effect.fail(new DatabaseError({ cause: new QueryTimeout(QUERY_TIMEOUT_MILLIS) }))
            })
          ),
        listen: (channel, onNotify) =>
          Effect.asVoid(Effect.acquireRelease(
            Effect.tryPromise({ try: () => driver.listen(channel, onNotify), catch: (cause) => new DatabaseError({ cause }) }),
            (unlisten) => Effect.promise(() => unlisten().catch(() => undefined))
          ))
      })
    })
  )
}
