import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../../src/config.ts"
import { Database } from "../../src/db/Database.ts"
import { createTestDatabase, postgresAdminUrl } from "@petstore/test-support"

/** A migrated, empty database of the backend, for tests of one service at a time. */
export const testDatabase = (backend: "pglite" | "postgres") =>
  Layer.unwrap(Effect.gen(function*() {
    if (backend === "pglite") {
      return Database.layer.pipe(
        Layer.provide(AppConfig.layerWith({ dataDir: ":memory:", databaseUrl: Option.none() }))
      )
    }
    const database = yield* Effect.acquireRelease(
      Effect.promise(() => createTestDatabase(postgresAdminUrl!)),
      (database) => Effect.promise(() => database.drop())
    )
    return Database.layer.pipe(
      Layer.provide(AppConfig.layerWith({ databaseUrl: Option.some(Redacted.make(database.url)) }))
    )
  }))
