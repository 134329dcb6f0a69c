import { postgresAdminUrl } from "@petstore/test-support"
import { describe } from "vitest"

if (postgresAdminUrl === undefined && process.env.CI === "true") {
  throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL suites would be skipped")
}

export type Backend = "pglite" | "postgres"

/**
 * Options of a suite that needs PostgreSQL. Without DATABASE_URL,
 * vitest.config.ts skips the tests tagged `postgres`, and its reporter names
 * them once at the end of the run; they are counted as skipped, never left out.
 */
export const needsPostgres = { tags: ["postgres"] }

/** The stores every HTTP suite runs against. */
export const backends: ReadonlyArray<{ readonly name: Backend }> = [{ name: "pglite" }, { name: "postgres" }]

export const suiteOptions = (backend: Backend) => backend === "postgres" ? needsPostgres : {}

/** The suite once per store, as `<title> on pglite` and `<title> on postgres`. */
export const describeOnEachBackend = (title: string, body: (backend: { readonly name: Backend }) => void) => {
  for (const backend of backends) {
    describe(`${title} on ${backend.name}`, suiteOptions(backend.name), () => body(backend))
  }
}
