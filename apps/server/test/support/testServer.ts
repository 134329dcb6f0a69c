import { Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { AppConfig, type AppConfigValues } from "../../src/config.ts"
import { ListenAddresses, ServerLive } from "../../src/server.ts"
import { ADMIN_TOKEN } from "@petstore/test-support"
import { createTestDatabase, postgresAdminUrl } from "./databases.ts"

export { ADMIN_TOKEN }

export interface RunningServer {
  readonly baseUrl: string
  readonly adminUrl: string
  /** A new API key of the plan, through the admin API. */
  readonly createKey: (plan?: "free" | "pro" | "business" | "enterprise", limits?: { perMinute: number; perDay: number }) => Promise<{ id: string; key: string }>
  readonly stop: () => Promise<void>
}

/**
 * Starts the whole server in this process on free ports, as `pnpm start`
 * would, over PGlite in memory or a fresh PostgreSQL database.
 */
export const startServer = async (
  backend: "pglite" | "postgres",
  overrides: Partial<AppConfigValues> = {}
): Promise<RunningServer> => {
  const database = backend === "postgres" ? await createTestDatabase(postgresAdminUrl!) : undefined
  const config = AppConfig.layerWith({
    host: "127.0.0.1",
    port: 0,
    adminHost: "127.0.0.1",
    adminPort: 0,
    adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
    databaseUrl: database ? Option.some(Redacted.make(database.url)) : Option.none(),
    dataDir: ":memory:",
    logLevel: "Warn",
    ...overrides
  })
  const scope = Effect.runSync(Scope.make())
  const addresses = await Effect.runPromise(
    Layer.buildWithScope(ServerLive.pipe(Layer.provide(config)), scope).pipe(
      Effect.map((context) => context.mapUnsafe.get(ListenAddresses.key) as ListenAddresses["Service"])
    )
  )
  const adminUrl = Option.getOrThrow(addresses.admin)
  return {
    baseUrl: `${addresses.public}/v1`,
    adminUrl,
    createKey: async (plan = "free", limits) => {
      const response = await fetch(`${adminUrl}/admin/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ plan, ...(limits ? { limits } : {}) })
      })
      if (response.status !== 201) throw new Error(`key creation answered ${response.status}: ${await response.text()}`)
      return (await response.json()) as { id: string; key: string }
    },
    stop: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await database?.drop()
    }
  }
}
