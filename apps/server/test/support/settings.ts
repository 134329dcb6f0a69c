import { Redacted, Result } from "effect"
import { parseOpenApiServers } from "../../src/config.ts"
import { parseAllowedOrigins } from "../../src/net/corsOrigins.ts"
import { parsePostgresUrl } from "../../src/net/postgresUrl.ts"
import { parseProxyTrust } from "../../src/net/proxyTrust.ts"

/** Settings as the configuration decodes them from their variables, for a test's `AppConfig` overrides. */
const postgresUrl = (url: string) => Result.getOrThrow(parsePostgresUrl(url))

export const settings = {
  postgresUrl,
  databaseUrl: (url: string) => Redacted.make(postgresUrl(url)),
  trustProxy: (value: string) => Result.getOrThrow(parseProxyTrust(value)),
  corsAllowedOrigins: (value: string) => Result.getOrThrow(parseAllowedOrigins(value)),
  openApiServers: (value: string) => Result.getOrThrow(parseOpenApiServers(value))
}
