import { Effect, Layer, Option, Result } from "effect"
import { AppConfig } from "../../src/config.ts"
import { Database } from "../../src/db/Database.ts"
import { parseRedisUrl } from "../../src/net/redisUrl.ts"
import { missingTool, redisBinaries, startRedis } from "@petstore/test-support"
import { freshPgliteFolder, freshPostgresDatabase } from "./databaseTemplates.ts"
import { RedisQuotaStore, type RedisQuotaStoreOptions } from "../../src/quota/redis/RedisQuotaStore.ts"
import { settings } from "./settings.ts"

/** A migrated, empty database of the backend, for tests of one service at a time. */
export const testDatabase = (backend: "pglite" | "postgres") =>
  Layer.unwrap(Effect.gen(function*() {
    if (backend === "pglite") {
      const folder = yield* Effect.acquireRelease(
        Effect.sync(freshPgliteFolder),
        (folder) => Effect.sync(folder.remove)
      )
      return Database.layer.pipe(
        Layer.provide(AppConfig.layerWith({ dataDir: folder.dataDir, databaseUrl: Option.none() }))
      )
    }
    const database = yield* Effect.acquireRelease(
      Effect.promise(freshPostgresDatabase),
      (database) => Effect.promise(() => database.drop())
    )
    return Database.layer.pipe(
      Layer.provide(AppConfig.layerWith({ databaseUrl: Option.some(settings.databaseUrl(database.url)) }))
    )
  }))

/**
 * A Redis quota store on a Redis of its own (one server, or a 3-primary, 3-replica Cluster), started for the
 * suite and stopped after it. The request's clock decides, so tests move time with `TestClock`; the timeout
 * is generous: it is there to catch a hang, not to judge a busy machine.
 */
export const testRedisQuotaStore = (type: "single" | "cluster", options: Partial<RedisQuotaStoreOptions> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const redis = yield* Effect.acquireRelease(
      Effect.promise(() => startRedis({ cluster: type === "cluster" })),
      (redis) => Effect.promise(() => redis.stop())
    )
    return RedisQuotaStore.layer({
      type,
      url: Result.getOrThrow(parseRedisUrl(redis.url)),
      clock: "caller",
      timeoutMillis: 10_000,
      failure: "closed",
      ...options
    })
  }))

/** Suite options of a Redis suite: skipped with one line where redis-server is missing, a failure under CI=true. */
export const redisSuiteOptions = () =>
  redisBinaries() === undefined ? missingTool("no redis-server/redis-cli: apt-get install redis-server") : {}
