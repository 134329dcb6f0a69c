import { createTestDatabase, postgresAdminUrl } from "@petstore/test-support"
import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import postgres from "postgres"
import type { TestProject } from "vitest/node"
import type { Driver } from "../../src/db/Driver.ts"
import { migrate } from "../../src/db/migrate.ts"
import { pgliteDriver } from "../../src/db/pgliteDriver.ts"
import { scratchRoot } from "./databaseTemplates.ts"

/**
 * Makes one migrated database of each backend for the whole run, with the server's own migrations; each
 * in-process server and database layer starts from a copy of it (`databaseTemplates.ts`) instead of creating an
 * empty database and migrating it again. Start-up still reads the schema's state, finds nothing pending, serves.
 */
export default async function setup(project: TestProject) {
  const parent = mkdtempSync(join(scratchRoot(), "petstore-pglite-template-"))
  // PGlite runs initdb when it opens a new folder; a copy of the folder as initdb left it (closed, nothing migrated)
  // is what a test that needs an unmigrated database starts from, without paying for initdb again.
  const emptyDir = join(parent, "empty")
  await (await pgliteDriver(emptyDir)).close()
  project.provide("pgliteEmptyTemplateDir", emptyDir)
  const dataDir = join(parent, "data")
  cpSync(emptyDir, dataDir, { recursive: true })
  const pglite = await pgliteDriver(dataDir)
  try {
    await migrate(pglite)
  } finally {
    await pglite.close()
  }
  project.provide("pgliteTemplateDir", dataDir)

  const template = postgresAdminUrl === undefined
    ? undefined
    : await createTestDatabase(postgresAdminUrl, "petstore_template")
  if (template !== undefined) {
    // One connection, closed before any copy is made: PostgreSQL copies only a template nobody is connected to.
    const sql = postgres(template.url, { max: 1, onnotice: () => {} })
    try {
      await migrate(
        {
          transaction: (body) =>
            sql.begin((tx) => body((text, values) => tx.unsafe(text, values as Array<postgres.ParameterOrJSON<never>>)))
        } as Pick<Driver, "transaction"> as Driver
      )
    } finally {
      await sql.end()
    }
    project.provide("postgresTemplateDatabase", new URL(template.url).pathname.slice(1))
  }
  return async () => {
    rmSync(parent, { recursive: true, force: true })
    await template?.drop()
  }
}
