import { randomBytes } from "node:crypto"
import postgres from "postgres"

/**
 * The PostgreSQL server tests may use, from `DATABASE_URL`. Each suite makes a
 * database of its own there and drops it afterwards; the server itself is never touched.
 */
export const postgresAdminUrl = process.env.DATABASE_URL

if (postgresAdminUrl === undefined) {
  if (process.env.CI === "true") {
    throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL suites would be skipped")
  }
  console.warn("DATABASE_URL is not set: skipping the PostgreSQL suites, running on PGlite only")
}

export interface TestDatabase {
  readonly url: string
  readonly drop: () => Promise<void>
}

export const createTestDatabase = async (adminUrl: string): Promise<TestDatabase> => {
  const name = `petstore_test_${randomBytes(6).toString("hex")}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }
  }
}

/** The stores every HTTP suite runs against. */
export const backends: ReadonlyArray<{ readonly name: "pglite" | "postgres" }> = [
  { name: "pglite" },
  ...(postgresAdminUrl === undefined ? [] : [{ name: "postgres" as const }])
]
