import { PGlite } from "@electric-sql/pglite"
import { Context, Data, Effect, Layer, Option, Redacted, type Scope } from "effect"
import postgres from "postgres"
import { accessSync, constants as fsConstants, existsSync, mkdirSync, statSync } from "node:fs"
import { AppConfig, StartupError } from "../config.ts"
import { measureQuery } from "../observability/metrics.ts"
import { migrations } from "./migrations/index.ts"

/** A SQL statement with `$n` placeholders, as `sql\`…\`` builds it. */
export interface Statement {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

/** Tagged template for plain SQL: every interpolation becomes a bound parameter, never text. */
export const sql = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): Statement => ({
  text: strings.reduce((text, part, index) => `${text}$${index}${part}`),
  values
})

/**
 * A JavaScript array as a PostgreSQL array literal, to bind with an explicit
 * cast (`${arrayLiteral(ids)}::bigint[]`): the drivers infer array parameter
 * types differently, a literal string means the same to both.
 */
export const arrayLiteral = (values: ReadonlyArray<string | number | boolean | null>) =>
  `{${
    values.map((value) =>
      value === null ? "NULL" : typeof value === "string" ? `"${value.replace(/[\\"]/g, "\\$&")}"` : String(value)
    ).join(",")
  }}`

export class DatabaseError extends Data.TaggedError("DatabaseError")<{ readonly cause: unknown }> {
  override get message() {
    return this.cause instanceof Error ? this.cause.message : String(this.cause)
  }

  /**
   * Whether the database could not be reached or did not answer (an outage,
   * worth a 503 and a retry), rather than refusing the statement (a bug).
   */
  get unavailable(): boolean {
    const code = (this.cause as { code?: unknown } | undefined)?.code
    if (code === undefined || typeof code !== "string") return this.cause instanceof QueryTimeout
    // SQLSTATE classes 08 (connection), 53 (insufficient resources), 57 (operator intervention); driver socket errors.
    return /^(08|53|57)/.test(code) || /^(E[A-Z]+|CONNECT(ION)?_[A-Z_]+)$/.test(code)
  }
}

/** A statement that took longer than QUERY_TIMEOUT: the database (or the way to it) does not answer. */
export class QueryTimeout extends Error {
  constructor() {
    super(`The database did not answer within ${QUERY_TIMEOUT_MILLIS} ms`)
  }
}

/** No request waits on the database longer than this; it gets a 503 instead. */
export const QUERY_TIMEOUT_MILLIS = 5_000

type Rows = ReadonlyArray<Record<string, unknown>>
type RunQuery = (text: string, values: ReadonlyArray<unknown>) => Promise<Rows>

/** What the two engines have in common, as far as this service needs. */
interface Driver {
  readonly kind: "postgres" | "pglite"
  readonly query: RunQuery
  readonly transaction: <A>(body: (query: RunQuery) => Promise<A>) => Promise<A>
  /** Calls `onNotify` for each NOTIFY on the channel; the returned function stops listening. */
  readonly listen: (channel: string, onNotify: (payload: string) => void) => Promise<() => Promise<void>>
  readonly close: () => Promise<void>
}

const INT8_OID = 20

/** int8 columns hold ids and counters, all within the safe-integer range the API admits. */
const parseInt8 = (value: string) => Number(value)

const postgresDriver = (url: string): Driver => {
  const client = postgres(url, {
    max: 10,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: "petstore" },
    types: {
      int8: { to: INT8_OID, from: [INT8_OID], serialize: String, parse: parseInt8 }
    }
  })
  const run = (runner: postgres.Sql | postgres.TransactionSql): RunQuery => (text, values) =>
    runner.unsafe(text, values as Array<postgres.ParameterOrJSON<never>>, { prepare: true })
  return {
    kind: "postgres",
    query: run(client),
    transaction: (body) => client.begin((tx) => body(run(tx))) as Promise<never>,
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify)
      return unlisten
    },
    close: () => client.end({ timeout: 5 })
  }
}

const pgliteDriver = async (dataDir: string | undefined): Promise<Driver> => {
  const db = await PGlite.create(dataDir, { parsers: { [INT8_OID]: parseInt8 } })
  const run = (runner: Pick<PGlite, "query">): RunQuery => async (text, values) =>
    (await runner.query<Record<string, unknown>>(text, values as Array<unknown>)).rows
  return {
    kind: "pglite",
    query: run(db),
    transaction: (body) => db.transaction((tx) => body(run(tx))),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close()
  }
}

/** Any number of server processes may start at once: this lock lets one of them migrate at a time. */
const MIGRATION_LOCK_KEY = 7_305_481_121

const migrate = (driver: Driver) =>
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

const errorCode = (cause: unknown) => {
  const code = (cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/** Where a `postgres://` URL points, without its credentials: `host:port/database`. */
const databaseTarget = (url: string) => {
  const parsed = URL.parse(url)
  return parsed === null ? "DATABASE_URL" : `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
}

/**
 * Why PostgreSQL could not be opened, in the words an operator acts on. The
 * server's own messages (`role "x" does not exist`, `database "x" does not
 * exist`, a failed password) are already such words; socket errors are not.
 */
const postgresOpenFailure = (url: string, cause: unknown): string => {
  const code = errorCode(cause)
  const reason = code === "ECONNREFUSED"
    ? "connection refused: is PostgreSQL running there?"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? "unknown host"
    : code === "CONNECT_TIMEOUT" || code === "ETIMEDOUT"
    ? "no answer within 5 s"
    : cause instanceof Error && cause.message !== ""
    ? cause.message
    : String(code ?? cause)
  return `DATABASE_URL (${databaseTarget(url)}): ${reason}`
}

/** Failures to reach or enter the database, as opposed to a migration the database refused. */
const isOpenFailure = (cause: unknown) =>
  // SQLSTATE class 28 (authorization) and 3D000 (no such database), beside what is an outage later on.
  new DatabaseError({ cause }).unavailable || /^(28|3D000$)/.test(errorCode(cause) ?? "")

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ")

const dataDirProblem = (cause: unknown) => {
  switch (errorCode(cause)) {
    case "ENOTDIR":
      return "not a directory"
    case "EACCES":
    case "EPERM":
      return "permission denied"
    case "EROFS":
      return "a read-only file system"
    case "ENOENT":
      return "its parent directory does not exist"
    default:
      return oneLine(cause instanceof Error ? cause.message : String(cause))
  }
}

/**
 * `DATA_DIR` exists (created, as PGlite would, when its parent does), is a
 * directory and may be written: PGlite's own errors about it are emscripten
 * error numbers. Not `recursive`: Node's recursive mkdir never returns under `/proc`.
 */
const prepareDataDir = Effect.fnUntraced(function*(dir: string) {
  const isDirectory = yield* Effect.try({
    try: () => {
      if (!existsSync(dir)) mkdirSync(dir)
      accessSync(dir, fsConstants.R_OK | fsConstants.W_OK)
      return statSync(dir).isDirectory()
    },
    catch: (cause) => new StartupError({ message: `DATA_DIR (${dir}): ${dataDirProblem(cause)}` })
  })
  if (!isDirectory) return yield* new StartupError({ message: `DATA_DIR (${dir}): not a directory` })
})

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
          catch: (cause) =>
            new StartupError({
              message: `DATA_DIR (${config.dataDir}): PGlite cannot open it: ${
                oneLine(cause instanceof Error ? cause.message : JSON.stringify(cause))
              }`
            })
        }),
        (driver) => Effect.promise(() => driver.close().catch(() => undefined))
      )
      // postgres.js connects on the first statement: a database that cannot be reached or entered fails here.
      const applied = yield* Effect.tryPromise({
        try: () => migrate(driver),
        catch: (cause) =>
          new StartupError({
            message: Option.isSome(url) && isOpenFailure(cause)
              ? postgresOpenFailure(url.value, cause)
              : `the database refused the migrations: ${oneLine(cause instanceof Error ? cause.message : String(cause))}`
          })
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
              orElse: () => Effect.fail(new DatabaseError({ cause: new QueryTimeout() }))
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
