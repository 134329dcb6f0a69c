import { describe } from "vitest"
import { postgresAdminUrl } from "./support/realServer.ts"
import { conformsOn } from "./support/realServerSuite.ts"

// With CI=true a missing DATABASE_URL fails the run (startRealServer throws) rather than skipping it.
describe.runIf(postgresAdminUrl !== undefined || process.env.CI === "true")(
  "the real server on PostgreSQL conforms",
  () => conformsOn("postgres")
)
