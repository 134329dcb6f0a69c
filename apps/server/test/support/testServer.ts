import type { Plan, QuotaLimits } from "@petstore/contract"
import { Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { AppConfig, type AppConfigValues } from "../../src/config.ts"
import { ListenAddresses, ServerLive } from "../../src/server.ts"
import { ADMIN_TOKEN, createKey, type CreatedTestKey } from "@petstore/test-support"
import { freshPgliteFolder, freshPostgresDatabase } from "./databaseTemplates.ts"
import { settings } from "./settings.ts"

export interface RunningServer {
  readonly baseUrl: string
  readonly adminUrl: string
  /** A new API key of the plan, through the admin API. */
  readonly createKey: (plan?: Plan, limits?: QuotaLimits) => Promise<CreatedTestKey>
  readonly stop: () => Promise<void>
}

/**
 * Starts the whole server in this process on free ports, as `pnpm start`
 * would, over a fresh PGlite database (a copy of the run's migrated one) or a fresh PostgreSQL database.
 */
export const startServer = async (
  backend: "pglite" | "postgres",
  overrides: Partial<AppConfigValues> = {}
): Promise<RunningServer> => {
  const database = backend === "postgres" ? await freshPostgresDatabase() : undefined
  const pglite = backend === "pglite" && overrides.dataDir === undefined ? freshPgliteFolder() : undefined
  const config = AppConfig.layerWith({
    host: "127.0.0.1",
    port: 0,
    adminHost: "127.0.0.1",
    adminPort: 0,
    adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
    databaseUrl: database ? Option.some(settings.databaseUrl(database.url)) : Option.none(),
    dataDir: pglite?.dataDir ?? ":memory:",
    logLevel: "Warn",
    ...overrides
  })
  const scope = Effect.runSync(Scope.make())
  const addresses = await Effect.runPromise(
    Layer.buildWithScope(ServerLive.pipe(Layer.provide(config)), scope).pipe(
      Effect.map((context) => context.mapUnsafe.get(ListenAddresses.key) as ListenAddresses["Service"])
    )
  ).catch((cause: unknown) => {
    // A copy is tens of MiB of RAM-backed files: a server that did not start leaves none behind.
    pglite?.remove()
    throw cause
  })
  const adminUrl = Option.getOrThrow(addresses.admin)
  return {
    baseUrl: `${addresses.public}/v1`,
    adminUrl,
    createKey: (plan, limits) => createKey(adminUrl, plan, limits),
    stop: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await database?.drop()
      pglite?.remove()
    }
  }
}
