import { postgresAdminUrl } from "@petstore/test-support"

export { createTestDatabase, postgresAdminUrl, type TestDatabase } from "@petstore/test-support"

if (postgresAdminUrl === undefined) {
  if (process.env.CI === "true") {
    throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL suites would be skipped")
  }
  console.warn("DATABASE_URL is not set: skipping the PostgreSQL suites, running on PGlite only")
}

/** The stores every HTTP suite runs against. */
export const backends: ReadonlyArray<{ readonly name: "pglite" | "postgres" }> = [
  { name: "pglite" },
  ...(postgresAdminUrl === undefined ? [] : [{ name: "postgres" as const }])
]
