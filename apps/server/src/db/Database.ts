/**
 * The database: PostgreSQL through postgres.js when `DATABASE_URL` is set,
 * otherwise PGlite, the embedded PostgreSQL, which runs the same SQL and the
 * same migrations. One concern a file:
 *
 * - `sql.ts`: how statements are written (the `sql` tag, arrays as parameters);
 * - `DatabaseError.ts`: the one failure of a statement, and whether it is an outage;
 * - `Driver.ts`, `postgresDriver.ts`, `pgliteDriver.ts`: the two engines behind one interface;
 * - `connections.ts`, `answerWatch.ts`: how connections to PostgreSQL are made and watched;
 * - `postgresInternals.ts`: all the server relies on in postgres.js beyond its documented API;
 * - `migrate.ts` and `migrations/`: the schema, migrated at start-up;
 * - `startupFailures.ts`: why the database cannot be opened, in an operator's words;
 * - `batch.ts`: what the resolvers that answer a whole batch with one statement share;
 * - this file: the `Database` service, which opens, migrates, times and times out.
 *
 * A table's SQL lives in the module of that table (`pets/Pets.ts`,
 * `auth/ApiKeys.ts`, `quota/PostgresQuotaStore.ts`, `idempotency/IdempotencyKeys.ts`).
 *
 * Why this layer and not `effect/sql` (effect 4.1 ships `SqlClient`,
 * `Migrator`, `SqlResolver` and `SqlError`), weighed piece by piece:
 *
 * - `SqlClient` itself would do: effect-smol's `sql-pg` is built on `pg` and
 *   has `listen`, and a PGlite `sql` package exists. What it would not carry
 *   over is the connection-health layer under this one: every connection made
 *   by `connections.ts` (libpq's `sslmode` and certificates, several hosts
 *   tried in turn), watched for answers that never come (`answerWatch.ts`),
 *   and a timed-out statement closing its own connection — proven by the
 *   wedge, pooler, failover and TLS suites against postgres.js, the design's
 *   choice of driver. Moving means rebuilding that layer on `pg`'s hooks and
 *   proving it again; what it relies on in postgres.js is in `postgresInternals.ts`.
 * - `Migrator` records migrations in a table of its own (`effect_sql_migrations`,
 *   `migration_id`), applies only ids above the latest applied, and serialises
 *   processes with `LOCK TABLE`. Ours records `schema_migrations(version)` and
 *   applies every missing version under an advisory lock. Switching would re-run
 *   every migration on every existing database, or need a migration of the
 *   migrations table, and change nothing a user sees.
 * - `SqlError`'s `isRetryable` is not our `unavailable`. It calls deadlocks,
 *   serialization failures and lock timeouts (40P01, 40001, 55P03) retryable,
 *   which we answer 500, as bugs; which SQLSTATEs are an outage (too many
 *   connections, a shutting-down or starting-up server: 53300, 57P01, 57P03,
 *   answered 503 with `Retry-After`) is each driver package's mapping, not ours.
 *   Adopting its reasons would change which requests get a 503.
 * - `SqlResolver` (`ordered`, `grouped`, `findById`) decodes every row with a
 *   Schema and adds `SchemaError`, `ResultLengthMismatch` or
 *   `NoSuchElementError` to every request's failures. Our resolvers send one
 *   statement a batch with arrays bound as single parameters, share a page
 *   among equal queries and complete each request by ordinal; they use
 *   `RequestResolver` directly, which is what `SqlResolver` is built on.
 *
 * So nothing of it is adopted; worth weighing again if the connection-health
 * layer is rebuilt on a driver `SqlClient` runs on.
 */
import { Clock, Context, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { AppConfig, type AppConfigValues, pipelinesStatements, usesPreparedStatements } from "../config.ts"
import { StartupError } from "../startupError.ts"
import { measureQuery, recordConnectionClosedUnsafe, recordStatementTimeout } from "../observability/metrics.ts"
import { connectionSettings } from "./connectionSettings.ts"
import { DatabaseError, QueryTimeout } from "./DatabaseError.ts"
import { lockDataDir } from "./dataDirLock.ts"
import type { Driver, Rows } from "./Driver.ts"
import { knownVersion, migrate, migrationName, readSchemaState } from "./migrate.ts"
import { postgresDriver } from "./postgresDriver.ts"
import type { Statement } from "./sql.ts"
import { migrationsRefused, pgliteOpenFailure, postgresOpenFailure, prepareDataDir } from "./startupFailures.ts"

/** No request waits on the database longer than `DATABASE_STATEMENT_TIMEOUT` (default 5 s); it gets a 503 instead. */
const statementTimeoutMillis = (config: AppConfigValues) => config.databaseStatementTimeoutSeconds * 1_000

const realClock = Clock.Clock.defaultValue()

/**
 * The command that applies migrations, as the one-line refusals name it: from a checkout, and in the server image,
 * whose working directory is /app and whose entry point is `node dist/main.js` (deploy/images/Containerfile).
 */
export const MIGRATE_COMMAND = "`pnpm migrate` (in the server image: `node dist/main.js migrate`)"

interface Drivers {
  /** DATABASE_URL's (a transaction pooler's, when DATABASE_DIRECT_URL is set), or PGlite. */
  readonly main: Driver
  /** DATABASE_DIRECT_URL's, for what needs a session: LISTEN and migrations. */
  readonly direct: Option.Option<Driver>
  /** The variable naming the database migrations and the schema version are read through. */
  readonly schemaVariable: string
}

/**
 * Opens the configured database: postgres.js pools when `DATABASE_URL` is set
 * (connecting lazily), else PGlite. Closed with the scope.
 */
export const openDrivers = Effect.fnUntraced(function*(config: AppConfigValues, role: "serve" | "migrate") {
  const context = yield* Effect.context<never>()
  const url = Option.map(config.databaseUrl, Redacted.value)
  const directUrl = Option.map(config.databaseDirectUrl, Redacted.value)
  const dataDir = config.dataDir === ":memory:" ? undefined : config.dataDir
  if (Option.isNone(url)) {
    if (dataDir !== undefined) {
      yield* prepareDataDir(dataDir)
      yield* lockDataDir(dataDir)
    }
    // `migrate` answers with its one line only (docs/postgresql.md, "Roles and migrations").
    if (role === "serve") yield* announcePglite(dataDir)
  }
  const open = (make: () => Promise<Driver> | Driver, onFailure: (cause: unknown) => StartupError) =>
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => make(),
        catch: (cause) => cause instanceof StartupError ? cause : onFailure(cause)
      }),
      (driver) => Effect.promise(() => driver.close().catch(() => undefined))
    )
  const onConnectionClosed = (reason: string) => recordConnectionClosedUnsafe(context, reason)
  const main = yield* open(
    () =>
      Option.match(url, {
        onSome: (url) =>
          postgresDriver(connectionSettings("DATABASE_URL", url), {
            // Migrating needs one connection; serving, the pool operators sized.
            poolSize: role === "migrate" ? 1 : config.databasePoolSize,
            prepare: usesPreparedStatements(config),
            pipeline: pipelinesStatements(config),
            silenceMillis: role === "migrate" ? 0 : statementTimeoutMillis(config),
            onConnectionClosed
          }),
        // Imported only when it runs: PGlite's module is about 2 MiB of heap that a server on PostgreSQL never uses.
        onNone: () => import("./pgliteDriver.ts").then(({ pgliteDriver }) => pgliteDriver(dataDir))
      }),
    (cause) => pgliteOpenFailure(config.dataDir, cause)
  )
  const direct = Option.isNone(directUrl) ? Option.none<Driver>() : Option.some(
    yield* open(
      () =>
        // LISTEN holds its own connection (postgres.js makes one); migrations take one more, once.
        postgresDriver(connectionSettings("DATABASE_DIRECT_URL", directUrl.value), {
          poolSize: 1,
          prepare: true,
          pipeline: true,
          // Migrations may wait on a lock, and a listening connection owes nothing while it waits.
          silenceMillis: 0,
          onConnectionClosed
        }),
      (cause) => new StartupError({ message: `DATABASE_DIRECT_URL: ${String(cause)}` })
    )
  )
  return {
    main,
    direct,
    schemaVariable: Option.isSome(direct) ? "DATABASE_DIRECT_URL" : "DATABASE_URL"
  } satisfies Drivers
})

/**
 * Said before PGlite opens, which takes seconds, and tens of seconds the first time, when it creates the
 * database (PostgreSQL's initdb, in WebAssembly): without it a first `pnpm start` looked hung.
 */
const announcePglite = Effect.fnUntraced(function*(dataDir: string | undefined) {
  const creating = dataDir === undefined || !existsSync(join(dataDir, "PG_VERSION"))
  yield* Effect.logInfo(
    creating
      ? "creating the embedded database (PGlite); the first start takes a while"
      : "opening the embedded database (PGlite)"
  ).pipe(Effect.annotateLogs({ dataDir: dataDir ?? ":memory:" }))
  // The JSON log is written on the event loop's next turn, and PGlite's start may keep it busy for long:
  // give the line that turn first.
  yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
})

/** Where migrations run: the direct connection when there is one. */
const schemaDriver = (drivers: Drivers) => Option.getOrElse(drivers.direct, () => drivers.main)

const configuredUrl = (config: AppConfigValues, variable: string) =>
  Option.map(
    variable === "DATABASE_DIRECT_URL" ? config.databaseDirectUrl : config.databaseUrl,
    (url) => Redacted.value(url).text
  )

/** A failure to read or change the schema, in an operator's words: cannot connect (TLS, refused, …), or refused. */
const schemaFailure = (config: AppConfigValues, drivers: Drivers, cause: unknown) =>
  Option.match(configuredUrl(config, drivers.schemaVariable), {
    onNone: () => migrationsRefused(cause),
    onSome: (url) => postgresOpenFailure(drivers.schemaVariable, url, cause) ?? migrationsRefused(cause)
  })

/**
 * Applies pending migrations: `pnpm migrate`, and start-up when allowed.
 * Returns the migrations applied, as `<version>_<name>`.
 */
export const applyMigrations = Effect.fnUntraced(function*(config: AppConfigValues, drivers: Drivers) {
  return yield* Effect.tryPromise({
    try: () => migrate(schemaDriver(drivers)),
    catch: (cause) => schemaFailure(config, drivers, cause)
  })
})

/**
 * The schema at start-up. Its version is read first, which needs only SELECT:
 * - current: serve;
 * - migrations pending: apply them when `MIGRATE_ON_START` (the default) and
 *   the role may; otherwise stop with one line naming the pending version and the command;
 * - migrations this release does not know (a newer release's hosts migrated it,
 *   during a rolling upgrade): serve, and say so. Migrations only add to the
 *   schema what the release before them can ignore (docs/postgresql.md, "Roles and migrations").
 */
const prepareSchema = Effect.fnUntraced(function*(config: AppConfigValues, drivers: Drivers) {
  const driver = schemaDriver(drivers)
  const state = yield* Effect.tryPromise({
    try: () => readSchemaState(driver),
    catch: (cause) => schemaFailure(config, drivers, cause)
  })
  if (state.unknown.length > 0) {
    yield* Effect.logWarning("the schema is newer than this server: serving with it").pipe(
      Effect.annotateLogs({ unknownMigrations: state.unknown.join(","), newestKnown: knownVersion })
    )
  }
  if (state.pending.length === 0) return []
  const pendingLine = `migration ${migrationName(state.pending[0]!)}${
    state.pending.length > 1 ? ` and ${state.pending.length - 1} more` : ""
  } pending`
  if (!config.migrateOnStart) {
    return yield* new StartupError({
      message: `${pendingLine}, and MIGRATE_ON_START=false: apply it with ${MIGRATE_COMMAND} first`
    })
  }
  return yield* Effect.tryPromise({
    try: () => migrate(driver),
    catch: (cause) =>
      (cause as { code?: unknown }).code === "42501"
        ? new StartupError({
          message: `${pendingLine}, and this role may not apply it (${
            cause instanceof Error ? cause.message : String(cause)
          }): apply it with ${MIGRATE_COMMAND} as the schema's owner`
        })
        : schemaFailure(config, drivers, cause)
  })
})

export class Database extends Context.Service<Database, {
  readonly kind: Driver["kind"]
  readonly query: <Row = Record<string, unknown>>(
    statement: Statement
  ) => Effect.Effect<ReadonlyArray<Row>, DatabaseError>
  /** Runs `onNotify` for every NOTIFY on the channel, from any process, until the scope closes. */
  readonly listen: (
    channel: string,
    onNotify: (payload: string) => void
  ) => Effect.Effect<void, DatabaseError, Scope.Scope>
}>()("@petstore/server/db/Database") {
  /**
   * PostgreSQL when `DATABASE_URL` is set, otherwise PGlite under `DATA_DIR`.
   * The schema is checked (and migrated, when allowed) before the layer is ready.
   */
  static readonly layer = Layer.effect(
    Database,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const drivers = yield* openDrivers(config, "serve")
      // postgres.js connects on the first statement: a database that cannot be reached or entered fails here.
      const applied = yield* prepareSchema(config, drivers)
      const { main } = drivers
      yield* Effect.logInfo("database ready").pipe(
        Effect.annotateLogs({ store: main.kind, migrationsApplied: applied.join(",") || "none" })
      )
      // LISTEN needs a session: the direct connection's, when DATABASE_URL is a transaction pooler.
      const listener = Option.getOrElse(drivers.direct, () => main)
      const timeoutMillis = statementTimeoutMillis(config)
      return Database.of({
        kind: main.kind,
        query: <Row>(statement: Statement) =>
          Effect.suspend(() => {
            let sent: Promise<Rows> | undefined
            return measureQuery(Effect.tryPromise({
              try: () => (sent = main.query(statement.text, statement.values)) as Promise<ReadonlyArray<Row>>,
              catch: (cause) => new DatabaseError({ cause })
            })).pipe(
              Effect.timeoutOrElse({
                duration: timeoutMillis,
                orElse: () =>
                  recordStatementTimeout.pipe(
                    // Nothing may wait behind it: its connection may be lost to the protocol (docs/operations.md, "Outages").
                    Effect.andThen(Effect.sync(() => sent !== undefined && main.abandon(sent))),
                    Effect.andThen(Effect.fail(new DatabaseError({ cause: new QueryTimeout(timeoutMillis) })))
                  )
              }),
              // The database's silence is real time, whatever clock the service's own time runs on (tests move
              // a TestClock through quota windows and the webhook schedule while statements are in flight).
              Effect.provideService(Clock.Clock, realClock)
            )
          }),
        listen: (channel, onNotify) =>
          Effect.asVoid(Effect.acquireRelease(
            Effect.tryPromise({
              try: () => listener.listen(channel, onNotify),
              catch: (cause) => new DatabaseError({ cause })
            }),
            (unlisten) => Effect.promise(() => unlisten().catch(() => undefined))
          ))
      })
    })
  )
}
