import { type Config, Option, Redacted, Schema, SchemaIssue } from "effect"
import { type AppConfigValues, quotaStoreKind, settingOfOpenApiServers, usesPreparedStatements } from "./config.ts"
import { settingOfOrigins } from "./net/corsOrigins.ts"
import { settingOfProxyTrust } from "./net/proxyTrust.ts"

/** The configuration in an operator's words: as it is logged at start-up, and what is wrong with it. */

/**
 * The settings that do nothing as configured, left out of the logged configuration so that it shows only what
 * is in force: PGlite's folder beside PostgreSQL; PostgreSQL's connection settings beside PGlite; the admin
 * listener's address when there is no admin listener; Redis's settings beside another quota store.
 */
const notInForce = (config: AppConfigValues): ReadonlyArray<keyof AppConfigValues> => [
  ...(Option.isSome(config.databaseUrl)
    ? ["dataDir" as const]
    : ["databaseDirectUrl" as const, "databasePoolSize" as const, "databasePreparedStatements" as const]),
  ...(Option.isNone(config.adminToken) && !config.metricsPublic ? ["adminHost" as const, "adminPort" as const] : []),
  ...(quotaStoreKind(config) === "redis"
    ? []
    : ["redisType" as const, "redisUrl" as const, "quotaStoreFailure" as const, "quotaStoreTimeoutMillis" as const])
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
      onSome: (url) => maskUrl(Redacted.value(url).text)
    }),
    databaseDirectUrl: Option.match(config.databaseDirectUrl, {
      onNone: () => "<unset: no transaction pooler declared>",
      onSome: (url) => maskUrl(Redacted.value(url).text)
    }),
    databasePreparedStatements: usesPreparedStatements(config) ? "named (prepared)" : "unnamed",
    publicBaseUrl: Option.match(config.publicBaseUrl, { onNone: () => "<from request>", onSome: String }),
    openApiServers: Option.match(config.openApiServers, {
      onNone: () => "<PUBLIC_BASE_URL/v1, else the served origin>",
      onSome: settingOfOpenApiServers
    }),
    quotaStore: Option.getOrElse(config.quotaStore, () => "<by DATABASE_URL>"),
    redisUrl: Option.match(config.redisUrl, {
      onNone: () => "<unset>",
      onSome: (url) => Redacted.value(url).text.split(",").map((each) => maskUrl(each.trim())).join(",")
    }),
    banThreshold: Option.getOrElse(config.banThreshold, () => "<the key's per-minute limit>"),
    trustProxy: settingOfProxyTrust(config.trustProxy),
    corsAllowedOrigins: settingOfOrigins(config.corsAllowedOrigins) || "<unset: no CORS>",
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
