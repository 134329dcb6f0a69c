import { createTestDatabase, postgresAdminUrl, type TestDatabase } from "@petstore/test-support"
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inject } from "vitest"

declare module "vitest" {
  export interface ProvidedContext {
    /** A migrated PGlite folder, made once per run by `databaseTemplates.globalSetup.ts`; only ever copied. */
    pgliteTemplateDir: string | undefined
    /** The same PGlite folder before migration (initdb done, no tables), made with it; only ever copied. */
    pgliteEmptyTemplateDir: string | undefined
    /** A migrated PostgreSQL database, made once per run where DATABASE_URL is set; only ever a template. */
    postgresTemplateDatabase: string | undefined
  }
}

/**
 * Where PGlite copies go: a RAM-backed folder where there is one, since PGlite writes every page through the file
 * system, and a copy lives only as long as one server.
 */
export const scratchRoot = () => existsSync("/dev/shm") ? "/dev/shm" : tmpdir()

export interface PgliteFolder {
  /** The `dataDir` to give the server: a copy of the migrated template, or `:memory:` when there is none. */
  readonly dataDir: string
  readonly remove: () => void
}

/**
 * A fresh, migrated PGlite database of the caller's own. An empty PGlite runs `initdb` when it opens, about three
 * seconds of CPU each time; a copy of a folder created and migrated once for the run opens in a tenth of that,
 * and holds exactly what the server's start-up migrations make of an empty database (it is that, made once).
 */
export const freshPgliteFolder = (): PgliteFolder => {
  const template = inject("pgliteTemplateDir")
  if (template === undefined) return { dataDir: ":memory:", remove: () => {} }
  const parent = mkdtempSync(join(scratchRoot(), "petstore-pglite-"))
  const dataDir = join(parent, "data")
  cpSync(template, dataDir, { recursive: true })
  return { dataDir, remove: () => rmSync(parent, { recursive: true, force: true }) }
}

/**
 * A fresh PGlite folder that initdb has made but nothing has migrated: what a server sees on its first start with
 * MIGRATE_ON_START=false, less initdb's seconds of CPU (over two minutes on a machine at load 20).
 */
export const freshUnmigratedPgliteFolder = (): PgliteFolder => {
  const template = inject("pgliteEmptyTemplateDir")
  const parent = mkdtempSync(join(scratchRoot(), "petstore-pglite-"))
  const dataDir = join(parent, "data")
  if (template !== undefined) cpSync(template, dataDir, { recursive: true })
  return { dataDir, remove: () => rmSync(parent, { recursive: true, force: true }) }
}

/**
 * A fresh, migrated PostgreSQL database of the caller's own, beside DATABASE_URL's: a copy of the run's migrated
 * template (`CREATE DATABASE … TEMPLATE`), or an empty one that the server migrates when there is no template.
 */
export const freshPostgresDatabase = (): Promise<TestDatabase> =>
  createTestDatabase(postgresAdminUrl!, undefined, inject("postgresTemplateDatabase"))
