import {
  Config,
  Context,
  Effect,
  Layer,
  Option,
  Redacted,
  Result,
  Schema,
  SchemaIssue,
  SchemaTransformation
} from "effect"
import { type AllowedOrigins, parseAllowedOrigins, settingOfOrigins } from "./net/corsOrigins.ts"
import { parsePostgresUrl, type PostgresUrl } from "./net/postgresUrl.ts"
import { parseProxyTrust, type ProxyTrust, settingOfProxyTrust } from "./net/proxyTrust.ts"
import { parseRedisUrl } from "./net/redisUrl.ts"

/**
 * A setting decoded once, here, into the value the code uses: `parse` refuses a value with the words the operator
 * reads after the variable's name; `print` says the value again (the schema's encoding).
 */
const decodedBy = <From, Encoded, A>(
  from: Schema.Codec<From, Encoded>,
  parse: (value: From) => Result.Result<A, string>,
  print: (value: A) => From
) =>
  from.pipe(Schema.decodeTo(
    Schema.Any as Schema.Codec<A>,
    SchemaTransformation.transformEffect({
      decode: (value: From) =>
        Result.match(parse(value), {
          onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message })),
          onSuccess: Effect.succeed
        }),
      encode: (value: A) => Effect.succeed(print(value))
    })
  ))

/** A server of the OpenAPI document (`OPENAPI_SERVERS`): its URL, ending in /v1, and what it is called. */
export interface OpenApiServer {
  readonly url: string
  readonly description?: string
}

export const parseOpenApiServers = (setting: string): Result.Result<ReadonlyArray<OpenApiServer>, string> =>
  Result.succeed(
    setting.split(",").map((entry) => {
      const [url, ...description] = entry.trim().split(/\s+/)
      return description.length === 0 ? { url: url! } : { url: url!, description: description.join(" ") }
    })
  )

/** `OPENAPI_SERVERS` as it is written, for the logged configuration. */
export const settingOfOpenApiServers = (servers: ReadonlyArray<OpenApiServer>) =>
  servers.map(({ description, url }) => description === undefined ? url : `${url} ${description}`).join(", ")

const Host = Config.String
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer" }))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { expected: "a whole number, 0 or more" }))
/** Connections per process: see docs/postgresql.md, "Sizing: the connection budget". Above 100 a process only queues in PostgreSQL instead of in itself. */
const PoolSize = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 100 }, { expected: "a whole number from 1 to 100" })
)
/** Seconds a statement may wait for its answer before the request gets a 503 and the connection is replaced. */
const StatementTimeout = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 300 }, { expected: "a whole number of seconds from 1 to 300" })
)
/**
 * Seconds an idle keep-alive connection stays open. Longer than the idle timeouts of the balancers in front
 * (60 s is common), so that the balancer, not the server, closes an idle connection: a server that closes
 * first races the balancer's next request on it, which then fails (a 502 at the balancer).
 */
const KeepAliveTimeout = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 3600 }, { expected: "a whole number of seconds from 1 to 3600" })
)
/** A `postgres://` URL with libpq's parameters read (`net/postgresUrl.ts`); redacted, as it may hold a password. */
const PostgresUrlSetting = (name: string): Config.Config<Option.Option<Redacted.Redacted<PostgresUrl>>> =>
  Config.option(
    Config.schema(
      decodedBy(
        Schema.Redacted(
          Schema.String.check(Schema.isPattern(/^postgres(ql)?:\/\//, { expected: "a postgres:// URL" }))
        ),
        (url) => Result.map(parsePostgresUrl(Redacted.value(url)), Redacted.make),
        (url) => Redacted.make(Redacted.value(url).text)
      ),
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
  databaseUrl: PostgresUrlSetting("DATABASE_URL"),
  /** A direct (session) connection beside a transaction pooler's DATABASE_URL: LISTEN and migrations go through it. */
  databaseDirectUrl: PostgresUrlSetting("DATABASE_DIRECT_URL"),
  databasePoolSize: Config.schema(PoolSize, "DATABASE_POOL_SIZE").pipe(Config.withDefault(10)),
  databaseStatementTimeoutSeconds: Config.schema(StatementTimeout, "DATABASE_STATEMENT_TIMEOUT").pipe(
    Config.withDefault(5)
  ),
  keepAliveTimeoutSeconds: Config.schema(KeepAliveTimeout, "KEEP_ALIVE_TIMEOUT").pipe(Config.withDefault(65)),
  /** Unset: named prepared statements unless DATABASE_DIRECT_URL declares DATABASE_URL a transaction pooler. */
  databasePreparedStatements: Config.option(Config.Boolean("DATABASE_PREPARED_STATEMENTS")),
  migrateOnStart: Config.Boolean("MIGRATE_ON_START").pipe(Config.withDefault(true)),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./.data")),
  publicBaseUrl: Config.option(Config.URL("PUBLIC_BASE_URL")),
  /** Servers of the OpenAPI document: comma-separated `http(s)://…/v1` URLs, each optionally followed by a description. */
  openApiServers: Config.option(Config.schema(
    decodedBy(
      Schema.String.check(Schema.isPattern(
        /^\s*https?:\/\/[^\s,/?#]+(?:\/[^\s,?#]*)?\/v1(?:\s+[^\s,][^,]*)?(?:,\s*https?:\/\/[^\s,/?#]+(?:\/[^\s,?#]*)?\/v1(?:\s+[^\s,][^,]*)?)*\s*$/,
        { expected: "comma-separated http(s) URLs ending in /v1, each optionally followed by a description" }
      )),
      parseOpenApiServers,
      settingOfOpenApiServers
    ),
    "OPENAPI_SERVERS"
  )),
  logLevel: Config.LogLevel("LOG_LEVEL").pipe(Config.withDefault("Info" as const)),
  logFormat: Config.Literals(["json", "pretty"], "LOG_FORMAT").pipe(Config.withDefault("json" as const)),
  quotaStore: Config.option(Config.Literals(["memory", "postgres", "redis"], "QUOTA_STORE")),
  /** Redis or Valkey for `QUOTA_STORE=redis` (README "Quotas on Redis"): one server, or a Cluster's seed nodes. */
  redisType: Config.Literals(["single", "cluster"], "REDIS_TYPE").pipe(Config.withDefault("single" as const)),
  /** Its URLs and TLS parameters read (`net/redisUrl.ts`); redacted, as it may hold a password. */
  redisUrl: Config.option(Config.schema(
    decodedBy(
      Schema.Redacted(Schema.String.check(Schema.isPattern(/^rediss?:\/\/[^\s,]+(,\s*rediss?:\/\/[^\s,]+)*$/, {
        expected: "a redis:// or rediss:// URL (a Cluster's seed nodes comma-separated)"
      }))),
      (setting) => Result.map(parseRedisUrl(Redacted.value(setting)), Redacted.make),
      (url): Redacted.Redacted<string> => Redacted.make(Redacted.value(url).text)
    ),
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
  /** `false`, a number of proxy hops, or proxy addresses/CIDR networks (`net/proxyTrust.ts`). */
  trustProxy: Config.schema(decodedBy(Schema.String, parseProxyTrust, settingOfProxyTrust), "TRUST_PROXY").pipe(
    Config.withDefault<ProxyTrust>({ kind: "none" })
  ),
  /** Comma-separated origins, or `*`; empty, CORS is off (`net/corsOrigins.ts`). */
  corsAllowedOrigins: Config.schema(
    decodedBy(Schema.String, parseAllowedOrigins, settingOfOrigins),
    "CORS_ALLOWED_ORIGINS"
  ).pipe(Config.withDefault<AllowedOrigins>({ _tag: "None" })),
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

/**
 * Statements pipelined on a busy connection: only where no transaction pooler is declared or implied by unnamed
 * statements (a pooler loses pipelined answers: `db/postgresInternals.ts`, `pipelineOption`).
 */
export const pipelinesStatements = (config: AppConfigValues): boolean =>
  Option.isNone(config.databaseDirectUrl) && usesPreparedStatements(config)

export class AppConfig extends Context.Service<AppConfig, AppConfigValues>()("@petstore/server/AppConfig") {
  /** For tests: the defaults, with some values replaced. */
  static readonly layerWith = (overrides: Partial<AppConfigValues>) =>
    Layer.effect(
      AppConfig,
      Effect.map(AppConfigShape, (values) => ({ ...values, ...overrides }))
    )
}
