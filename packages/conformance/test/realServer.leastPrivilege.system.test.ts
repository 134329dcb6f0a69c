import { execFileSync, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { createTestDatabase, freePort, readmeRuntimeRoleStatements, serverEntry } from "@petstore/test-support"
import { postgresAdminUrl } from "./support/realServer.ts"
import { conformsOn } from "./support/realServerSuite.ts"

/** `main.js migrate` (what `pnpm migrate` runs after building), as the schema's owner. */
const migrateAs = (databaseUrl: string) =>
  spawnSync(process.execPath, [serverEntry(), "migrate"], {
    env: { PATH: process.env.PATH ?? "", DATABASE_URL: databaseUrl },
    encoding: "utf8",
    timeout: 120_000
  })

/** Statements run by psql, as the URL's role. */
const psql = (url: string, statements: ReadonlyArray<string>) =>
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-q", ...statements.flatMap((statement) => ["-c", statement])], {
    stdio: "pipe"
  })

/** A role of its own on the fresh database, with only the runtime grants; dropped afterwards. */
const runtimeRole = async (databaseUrl: string) => {
  const role = `petstore_rt_${randomBytes(4).toString("hex")}`
  const url = new URL(databaseUrl)
  const database = url.pathname.slice(1)
  const owner = decodeURIComponent(url.username)
  psql(databaseUrl, readmeRuntimeRoleStatements(role, database, owner))
  url.username = role
  return {
    url: url.toString(),
    undo: async () => {
      psql(databaseUrl, [`DROP OWNED BY ${role}`, `DROP ROLE ${role}`])
    }
  }
}

const ready = postgresAdminUrl !== undefined || process.env.CI === "true"

/**
 * Least privilege: the schema's owner migrates with the migrate command, then
 * the server runs as a role that may only read and write rows, and the whole
 * suite passes. With a migration pending, that role's start-up stops with one
 * line naming it and the command.
 */
describe.runIf(ready)(
  "the real server as a role that may only read and write rows conforms",
  () =>
    conformsOn("postgres", async (databaseUrl) => {
      const migrated = migrateAs(databaseUrl)
      expect(migrated.status, migrated.stderr).toBe(0)
      expect(migrated.stdout).toMatch(/^petstore: migrations applied: 1_create_pets, /)
      const { url, undo } = await runtimeRole(databaseUrl)
      return { env: { DATABASE_URL: url }, undo }
    })
)

describe.runIf(ready)("a runtime role with a migration pending", () => {
  it("stops with one line naming the pending migration and the command", async () => {
    const database = await createTestDatabase(postgresAdminUrl!, "petstore_least")
    try {
      expect(migrateAs(database.url).status).toBe(0)
      expect(migrateAs(database.url).stdout).toBe("petstore: migrations applied: none pending\n")
      const role = await runtimeRole(database.url)
      try {
        // As if this release brought a migration the owner has not applied yet.
        psql(role.url, ["DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)"])
        const ports = { HOST: "127.0.0.1", PORT: String(await freePort()), ADMIN_PORT: String(await freePort()) }
        const started = spawnSync(process.execPath, [serverEntry()], {
          env: { PATH: process.env.PATH ?? "", ...ports, DATABASE_URL: role.url },
          encoding: "utf8",
          timeout: 60_000
        })
        expect(started.status, started.stderr).toBe(1)
        expect(started.stderr).toMatch(
          /^petstore: cannot start: migration \d{4}_\w+ pending, and this role may not apply it \(permission denied[^\n]*\): apply it with `pnpm migrate` \(in the server image: `node dist\/main\.js migrate`\) as the schema's owner\n$/
        )
        // MIGRATE_ON_START=false says the same without trying.
        const refused = spawnSync(process.execPath, [serverEntry()], {
          env: { PATH: process.env.PATH ?? "", ...ports, DATABASE_URL: database.url, MIGRATE_ON_START: "false" },
          encoding: "utf8",
          timeout: 60_000
        })
        expect(refused.status, refused.stderr).toBe(1)
        expect(refused.stderr).toMatch(
          /^petstore: cannot start: migration \d{4}_\w+ pending, and MIGRATE_ON_START=false: apply it with `pnpm migrate`/
        )
      } finally {
        await role.undo()
      }
    } finally {
      await database.drop()
    }
  }, 180_000)
})
