import { randomBytes } from "node:crypto"
import postgres from "postgres"

/**
 * The PostgreSQL server tests may use, from `DATABASE_URL`. Each suite makes a
 * database of its own there and drops it afterwards; the server itself is never touched.
 */
export const postgresAdminUrl: string | undefined = process.env.DATABASE_URL

export interface TestDatabase {
  readonly url: string
  readonly drop: () => Promise<void>
}

/**
 * A new database beside the one `adminUrl` names: empty, or a copy of `template` (a database nobody is connected
 * to), which PostgreSQL makes by copying files, far cheaper than replaying what made the template.
 */
export const createTestDatabase = async (
  adminUrl: string,
  prefix = "petstore_test",
  template?: string
): Promise<TestDatabase> => {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(
    template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}`
  )
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
