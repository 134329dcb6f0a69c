import type { KeyRole, Plan, QuotaLimits } from "@petstore/contract"
import {
  ADMIN_TOKEN,
  createTestDatabase,
  postgresAdminUrl,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"

export { postgresAdminUrl }

export interface RealServer {
  readonly baseUrl: string
  /** The admin listener and its token, as the suite's `admin` option takes them. */
  readonly admin: { readonly url: string; readonly token: string }
  readonly createKey: (plan: Plan, limits?: QuotaLimits, role?: KeyRole) => Promise<string>
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/**
 * The server this repository ships (its compiled build, `serverEntry`), run as operators
 * run it: its own process, on PGlite in memory or a fresh PostgreSQL database.
 * The suite itself only ever talks HTTP to it.
 */
/** How a PostgreSQL run reaches its fresh database: a pooler in front of it, another role; undone after the run. */
export type Deployment = (
  databaseUrl: string
) => Promise<{ readonly env: Record<string, string>; readonly undo: () => Promise<void> }>

export const startRealServer = async (
  backend: "pglite" | "postgres",
  deployment?: Deployment,
  env: Record<string, string> = {}
): Promise<RealServer> => {
  if (backend === "postgres" && postgresAdminUrl === undefined) {
    throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL run of the conformance suite cannot run")
  }
  const database: TestDatabase | undefined = backend === "postgres"
    ? await createTestDatabase(postgresAdminUrl!, "petstore_conformance")
    : undefined
  let deployed: Awaited<ReturnType<Deployment>> | undefined
  try {
    deployed = database === undefined || deployment === undefined ? undefined : await deployment(database.url)
    const started = await startServerProcess({
      DATA_DIR: ":memory:",
      ...(database === undefined ? {} : { DATABASE_URL: database.url }),
      ...deployed?.env,
      ...env
    })
    return {
      baseUrl: `${started.origin}/v1`,
      admin: { url: started.admin, token: ADMIN_TOKEN },
      createKey: started.createKey,
      output: started.server.output,
      stop: async () => {
        await started.server.stop()
        await deployed?.undo()
        await database?.drop()
      }
    }
  } catch (error) {
    await deployed?.undo()
    await database?.drop()
    throw error
  }
}
