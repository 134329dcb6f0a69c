import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Result, Schema, SchemaIssue } from "effect"
import { readFileSync, statSync } from "node:fs"
import { parseAllowedOrigins } from "./net/corsOrigins.ts"
import { parseProxyTrust } from "./net/proxyTrust.ts"

const Host = Config.String
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer" }))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { expected: "a whole number, 0 or more" }))
/** Connections per process: see the README's connection budget. Above 100 a process only queues in PostgreSQL instead of in itself. */
const PoolSize = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 100 }, { expected: "a whole number from 1 to 100" })
)
/** Seconds a statement may wait for its answer before the request gets a 503 and the connection is replaced. */
const StatementTimeout = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 300 }, { expected: "a whole number of seconds from 1 to 300" })
)
const PostgresUrl = (name: string) =>
  Config.option(
    Config.schema(
      Schema.Redacted(Schema.String.check(Schema.isPattern(/^postgres(ql)?:\/\//, { expected: "a postgres:// URL" }))),
      name
    )
  )

/** Everything the server reads from its environment, each variable checked on its own. */
const EnvironmentShape = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(8080)),
  host: Host("HOST").pipe(Config.withDefault("0.0.0.0")),
  adminHost: Host("ADMIN_HOST").pipe(Config.withDefault("127.0.0.1")),
  adminPort: Config.Port("ADMIN_PORT").pipe(Config.withDefault(8081)),
  adminToken: Config.option(
    Config.schema(
      Schema.Redacted(Schema.String.check(Schema.isMinLength(16, { expected: "a token of at least 16 characters" }))),
      "ADMIN_TOKEN"
    )
  ),
  databaseUrl: Config.option(
    Config.schema(
      Schema.Redacted(Schema.String.check(Schema.isPattern(/^postgres(ql)?:\/\//, { expected: "a postgres:// URL" }))),
      "DATABASE_URL"
    )
  ),
  /** A direct (session) connection beside a transaction pooler's DATABASE_URL: LISTEN and migrations go through it. */
  databaseDirectUrl: PostgresUrl("DATABASE_DIRECT_URL"),
  databasePoolSize: Config.schema(PoolSize, "DATABASE_POOL_SIZE").pipe(Config.withDefault(10)),
  databaseStatementTimeoutSeconds: Config.schema(StatementTimeout, "DATABASE_STATEMENT_TIMEOUT").pipe(
    Config.withDefault(5)
  ),
  /** Unset: named prepared statements unless DATABASE_DIRECT_URL declares DATABASE_URL a transaction pooler. */
  databasePreparedStatements: Config.option(Config.Boolean("DATABASE_PREPARED_STATEMENTS")),
  migrateOnStart: Config.Boolean("MIGRATE_ON_START").pipe(Config.withDefault(true)),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./.data")),
  publicBaseUrl: Config.option(Config.URL("PUBLIC_BASE_URL")),
  /** Servers of the OpenAPI document: comma-separated `http(s)://…/v1` URLs, each optionally followed by a description. */
  openApiServers: Config.option(Config.schema(
    Schema.String.check(Schema.isPattern(
      /^\s*https?:\/\/[^\s,/?#]+(?:\/[^\s,?#]*)?\/v1(?:\s+[^\s,][^,]*)?(?:,\s*https?:\/\/[^\s,/?#]+(?:\/[^\s,?#]*)?\/v1(?:\s+[^\s,][^,]*)?)*\s*$/,
      { expected: "comma-separated http(s) URLs ending in /v1, each optionally followed by a description" }
    )),
    "OPENAPI_SERVERS"
  )),
  logLevel: Config.LogLevel("LOG_LEVEL").pipe(Config.withDefault("Info" as const)),
  logFormat: Config.Literals(["json", "pretty"], "LOG_FORMAT").pipe(Config.withDefault("json" as const)),
  quotaStore: Config.option(Config.Literals(["memory", "postgres", "redis"], "QUOTA_STORE")),
  /** Redis or Valkey for `QUOTA_STORE=redis` (README "Quotas on Redis"): one server, or a Cluster's seed nodes. */
  redisType: Config.Literals(["single", "cluster"], "REDIS_TYPE").pipe(Config.withDefault("single" as const)),
  redisUrl: Config.option(Config.schema(
    Schema.Redacted(Schema.String.check(Schema.isPattern(/^rediss?:\/\/[^\s,]+(,\s*rediss?:\/\/[^\s,]+)*$/, {
      expected: "a redis:// or rediss:// URL (a Cluster's seed nodes comma-separated)"
    }))),
    "REDIS_URL"
  )),
  quotaStoreFailure: Config.Literals(["closed", "open"], "QUOTA_STORE_FAILURE").pipe(
    Config.withDefault("closed" as const)
  ),
  quotaStoreTimeoutMillis: Config.schema(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 60_000 }, { expected: "milliseconds from 1 to 60000" })),
    "QUOTA_STORE_TIMEOUT"
  ).pipe(Config.withDefault(250)),
  anonymousPerMinute: Config.schema(PositiveInt, "ANONYMOUS_RATE_LIMIT").pipe(Config.withDefault(60)),
  banThreshold: Config.option(Config.schema(PositiveInt, "BAN_THRESHOLD")),
  banSeconds: Config.schema(PositiveInt, "BAN_SECONDS").pipe(Config.withDefault(900)),
  /** Read by `net/proxyTrust.ts`: `false`, a number of proxy hops, or proxy addresses/CIDR networks. */
  trustProxy: Config.schema(
    Schema.String.check(
      Schema.makeFilter((value) =>
        Result.match(parseProxyTrust(value), { onFailure: (why) => why, onSuccess: () => true })
      )
    ),
    "TRUST_PROXY"
  ).pipe(Config.withDefault("false")),
  /** Read by `http/cors.ts`: comma-separated origins, or `*`; empty, CORS is off. */
  corsAllowedOrigins: Config.schema(
    Schema.String.check(
      Schema.makeFilter((value) =>
        Result.match(parseAllowedOrigins(value), { onFailure: (why) => why, onSuccess: () => true })
      )
    ),
    "CORS_ALLOWED_ORIGINS"
  ).pipe(Config.withDefault("")),
  metricsPublic: Config.Boolean("METRICS_PUBLIC").pipe(Config.withDefault(false)),
  otlpEndpoint: Config.option(Config.URL("OTEL_EXPORTER_OTLP_ENDPOINT")),
  workers: Config.schema(PositiveInt, "WORKERS").pipe(Config.withDefault(1)),
  shutdownDrainSeconds: Config.schema(NonNegativeInt, "SHUTDOWN_DRAIN_SECONDS").pipe(Config.withDefault(0)),
  /** Webhooks (README "Events and webhooks"): plain-HTTP URLs, private addresses, and whether this process delivers. */
  webhookAllowHttp: Config.Boolean("WEBHOOK_ALLOW_HTTP").pipe(Config.withDefault(false)),
  webhookAllowPrivateAddresses: Config.Boolean("WEBHOOK_ALLOW_PRIVATE_ADDRESSES").pipe(Config.withDefault(false)),
  webhookDelivery: Config.Boolean("WEBHOOK_DELIVERY").pipe(Config.withDefault(true))
})

export type AppConfigValues = Config.Success<typeof EnvironmentShape>

/** Where quota counts live: the store follows the database unless `QUOTA_STORE` says otherwise. */
export const quotaStoreKind = (config: AppConfigValues): "memory" | "postgres" | "redis" =>
  Option.getOrElse(config.quotaStore, () => Option.isSome(config.databaseUrl) ? "postgres" : "memory")

/**
 * Each process counts in-memory quotas apart, so more than one worker needs a shared quota store; and the
 * embedded database is one process's (its folder is locked), so more than one worker needs PostgreSQL. A
 * configuration that asks for either is refused like an invalid value: one line naming WORKERS.
 */
const workersShareTheirQuotas = (config: AppConfigValues): Config.Config<AppConfigValues> => {
  if (config.workers <= 1) return Config.succeed(config)
  const problem = Option.isNone(config.databaseUrl)
    ? `${config.workers} processes need PostgreSQL (set DATABASE_URL); the embedded database (DATA_DIR) serves ` +
      "one process at a time"
    : quotaStoreKind(config) === "memory"
    ? `${config.workers} processes need a shared quota store (set DATABASE_URL, or QUOTA_STORE=redis); ` +
      "the in-memory store would count each process's quotas apart"
    : undefined
  return problem === undefined
    ? Config.succeed(config)
    : Config.fail(
      new Schema.SchemaError(new SchemaIssue.Pointer(["WORKERS"], new SchemaIssue.InvalidValue({ message: problem })))
    )
}

/** The variables that hold secrets: each may instead name a file that holds it, as `NAME_FILE`. */
export const SECRET_VARIABLES = ["ADMIN_TOKEN", "DATABASE_URL", "DATABASE_DIRECT_URL", "REDIS_URL"] as const
const SECRET_FILE_MAX_BYTES = 64 * 1024

/**
 * Secrets from files, as official images take them (`POSTGRES_PASSWORD_FILE`): Kubernetes and Compose mount a
 * secret as a file, so it need not sit in the environment, where `podman inspect` and `/proc/<pid>/environ`
 * show it. `NAME_FILE` names a regular file of at most 64 KiB whose contents, less one trailing newline, are
 * `NAME`'s value, checked as `NAME` is. Setting both, or a file that cannot be read, stops the start-up with
 * one line naming `NAME_FILE`.
 */
export const withSecretFiles = (provider: ConfigProvider.ConfigProvider): ConfigProvider.ConfigProvider =>
  ConfigProvider.make((path) => {
    const name = path.length === 1 ? SECRET_VARIABLES.find((secret) => secret === path[0]) : undefined
    if (name === undefined) return provider.load(path)
    return Effect.gen(function*() {
      const [value, file] = [yield* provider.load([name]), yield* provider.load([`${name}_FILE`])]
      if (file === undefined || file._tag !== "Value") return value
      if (value !== undefined) {
        return yield* new ConfigProvider.SourceError({ message: `${name}_FILE: ${name} is set too; set one of them` })
      }
      return ConfigProvider.makeValue(yield* readSecretFile(`${name}_FILE`, file.value))
    })
  })

const readSecretFile = (variable: string, path: string) =>
  Effect.try({
    try: () => {
      const stats = statSync(path)
      if (!stats.isFile()) throw new Error("not a regular file")
      if (stats.size > SECRET_FILE_MAX_BYTES) throw new Error(`larger than ${SECRET_FILE_MAX_BYTES} bytes`)
      return readFileSync(path, "utf8").replace(/\r?\n$/, "")
    },
    catch: (error) =>
      new ConfigProvider.SourceError({
        message: `${variable}: cannot read ${path}: ${
          (error as NodeJS.ErrnoException).code ?? (error as Error).message
        }`
      })
  })

/** A direct URL beside no pooler's URL means nothing: refused rather than ignored. */
const directUrlNeedsDatabaseUrl = (config: AppConfigValues): Config.Config<AppConfigValues> =>
  Option.isSome(config.databaseDirectUrl) && Option.isNone(config.databaseUrl)
    ? Config.fail(
      new Schema.SchemaError(
        new SchemaIssue.Pointer(
          ["DATABASE_DIRECT_URL"],
          new SchemaIssue.InvalidValue({ message: "set without DATABASE_URL (the pooler's URL it stands beside)" })
        )
      )
    )
    : Config.succeed(config)

/** The Redis quota store needs its address; an address nothing uses would be a mistake kept quiet. */
const redisUrlWithRedisStore = (config: AppConfigValues): Config.Config<AppConfigValues> => {
  const redis = quotaStoreKind(config) === "redis"
  if (redis === Option.isSome(config.redisUrl)) return Config.succeed(config)
  return Config.fail(
    new Schema.SchemaError(
      new SchemaIssue.Pointer(
        [redis ? "REDIS_URL" : "QUOTA_STORE"],
        new SchemaIssue.InvalidValue({
          message: redis ? "required by QUOTA_STORE=redis" : "REDIS_URL is set: set QUOTA_STORE=redis to use it"
        })
      )
    )
  )
}

/** The configuration, read and checked once at start-up: every variable, then the rules that join them. */
export const AppConfigShape = EnvironmentShape.pipe(
  Config.flatMap(workersShareTheirQuotas),
  Config.flatMap(directUrlNeedsDatabaseUrl),
  Config.flatMap(redisUrlWithRedisStore)
)

/** Named prepared statements: as configured, else only when no transaction pooler is declared. */
export const usesPreparedStatements = (config: AppConfigValues): boolean =>
  Option.getOrElse(config.databasePreparedStatements, () => Option.isNone(config.databaseDirectUrl))

export class AppConfig extends Context.Service<AppConfig, AppConfigValues>()("@petstore/server/AppConfig") {
  /** For tests: the defaults, with some values replaced. */
  static readonly layerWith = (overrides: Partial<AppConfigValues>) =>
    Layer.effect(
      AppConfig,
      Effect.map(AppConfigShape, (values) => ({ ...values, ...overrides }))
    )
}

/**
 * The settings that do nothing as configured, left out of the logged configuration so that it shows only what
 * is in force: PGlite's folder beside PostgreSQL; PostgreSQL's connection settings beside PGlite; the admin
 * listener's address when there is no admin listener.
 */
const notInForce = (config: AppConfigValues): ReadonlyArray<keyof AppConfigValues> => [
  ...(Option.isSome(config.databaseUrl)
    ? ["dataDir" as const]
    : ["databaseDirectUrl" as const, "databasePoolSize" as const, "databasePreparedStatements" as const]),
  ...(Option.isNone(config.adminToken) && !config.metricsPublic ? ["adminHost" as const, "adminPort" as const] : [])
]

/**
 * The configuration as it may be logged: secrets masked, every value one a
 * person reads at a glance (an unset option says what that means, not `None`),
 * and only the settings in force.
 */
export const describeConfig = (config: AppConfigValues) => {
  const described: Partial<Record<keyof AppConfigValues, string | number | boolean>> = describeEvery(config)
  for (const name of notInForce(config)) delete described[name]
  return described
}

const describeEvery = (config: AppConfigValues) =>
  ({
    ...config,
    adminToken: Option.isSome(config.adminToken)
      ? "<set>"
      : config.metricsPublic
      ? "<unset: the admin listener serves /metrics only>"
      : "<unset: admin listener disabled>",
    databaseUrl: Option.match(config.databaseUrl, {
      onNone: () => "<unset: embedded PGlite>",
      onSome: (url) => maskUrl(Redacted.value(url))
    }),
    databaseDirectUrl: Option.match(config.databaseDirectUrl, {
      onNone: () => "<unset: no transaction pooler declared>",
      onSome: (url) => maskUrl(Redacted.value(url))
    }),
    databasePreparedStatements: usesPreparedStatements(config) ? "named (prepared)" : "unnamed",
    publicBaseUrl: Option.match(config.publicBaseUrl, { onNone: () => "<from request>", onSome: String }),
    openApiServers: Option.getOrElse(config.openApiServers, () => "<PUBLIC_BASE_URL/v1, else the served origin>"),
    quotaStore: Option.getOrElse(config.quotaStore, () => "<by DATABASE_URL>"),
    redisUrl: Option.match(config.redisUrl, {
      onNone: () => "<unset>",
      onSome: (urls) => Redacted.value(urls).split(",").map((url) => maskUrl(url.trim())).join(",")
    }),
    banThreshold: Option.getOrElse(config.banThreshold, () => "<the key's per-minute limit>"),
    corsAllowedOrigins: config.corsAllowedOrigins.trim() || "<unset: no CORS>",
    otlpEndpoint: Option.match(config.otlpEndpoint, { onNone: () => "<unset: no traces>", onSome: String })
  }) satisfies { readonly [K in keyof AppConfigValues]: string | number | boolean }

/** The password masked; by pattern, since a multi-host URL (`h1:5432,h2:5432`) is no WHATWG URL. */
const maskUrl = (url: string) => url.replace(/^([a-z]+:\/\/[^:@/]*:)[^@/]*@/i, "$1***@")

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** One line per bad variable, naming it: what an operator needs to fix a deployment. */
export const formatConfigError = (error: Config.ConfigError): string => {
  const cause = error.cause
  if (!Schema.isSchemaError(cause)) return cause.message
  return formatIssues(cause.issue).issues
    .map((issue) => `${(issue.path ?? []).map(String).join(".") || "configuration"}: ${issue.message}`)
    .join("; ")
}
