import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { ApiKeys, KEY_CACHE_TTL_MILLIS } from "../src/auth/ApiKeys.ts"
import { Database } from "../src/db/Database.ts"
import { describeOnEachBackend } from "./support/databases.ts"
import { testDatabase } from "./support/layers.ts"

/**
 * Two server processes: each has its own ApiKeys (and its own cache) over one
 * database. With `deaf`, the first never hears announcements, as when one is lost.
 */
const twoProcesses = (options: { readonly deaf?: boolean } = {}) =>
  Effect.gen(function*() {
    const database = yield* Database
    const build = (db: Database["Service"]) =>
      Layer.build(ApiKeys.layer.pipe(Layer.provide(Layer.succeed(Database, db)), Layer.fresh)).pipe(
        Effect.map((context) => context.mapUnsafe.get(ApiKeys.key) as ApiKeys["Service"])
      )
    const a = yield* build(options.deaf ? { ...database, listen: () => Effect.void } : database)
    const b = yield* build(database)
    return [a, b] as const
  })

/** Notifications travel through the database server: wait for one in real time, a bounded while. */
const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, done: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 200; attempt++) {
      const value = yield* check
      if (done(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* check
  })

describeOnEachBackend("ApiKeys", ({ name }) => {
  layer(testDatabase(name), { timeout: 300_000 })((it) => {
    it.effect("stores only a hash: the secret is psk_ and 256 random bits, and never in the table", () =>
      Effect.gen(function*() {
        const [keys] = yield* twoProcesses()
        const { key, secret } = yield* keys.create({ plan: "free" })
        assert.match(secret, /^psk_[A-Za-z0-9_-]{43}$/)
        const rows = yield* (yield* Database).query<Record<string, unknown>>({
          text: "SELECT * FROM api_keys WHERE id = $1",
          values: [key.id]
        })
        assert.notInclude(JSON.stringify(rows), secret)
      }))

    it.effect("a revocation in one process reaches the others at once", () =>
      Effect.gen(function*() {
        const [processA, processB] = yield* twoProcesses()
        const { key, secret } = yield* processA.create({ plan: "pro" })
        assert.isTrue(Option.isSome(yield* processA.authenticate(Redacted.make(secret))))
        assert.isTrue(yield* processB.revoke(key.id))
        const seen = yield* eventually(processA.authenticate(Redacted.make(secret)), Option.isNone)
        assert.isTrue(Option.isNone(seen), "revoked without the cache lifetime passing")
      }))

    it.effect("should an announcement be lost, a revocation still reaches every process within the cache lifetime", () =>
      Effect.gen(function*() {
        const [processA, processB] = yield* twoProcesses({ deaf: true })
        const { key, secret } = yield* processA.create({ plan: "pro" })
        assert.isTrue(Option.isSome(yield* processA.authenticate(Redacted.make(secret))))

        assert.isTrue(yield* processB.revoke(key.id))
        assert.isTrue(Option.isNone(yield* processB.authenticate(Redacted.make(secret))))

        yield* TestClock.adjust(KEY_CACHE_TTL_MILLIS - 1)
        assert.isTrue(Option.isSome(yield* processA.authenticate(Redacted.make(secret))), "still trusted from cache")
        yield* TestClock.adjust(1)
        assert.isTrue(Option.isNone(yield* processA.authenticate(Redacted.make(secret))), "revoked after the TTL")
        assert.isAtMost(KEY_CACHE_TTL_MILLIS, 5_000)
      }))

    it.effect("a plan change in one process reaches the others at once", () =>
      Effect.gen(function*() {
        const [processA, processB] = yield* twoProcesses()
        const { key, secret } = yield* processA.create({ plan: "free" })
        yield* processA.authenticate(Redacted.make(secret))
        yield* processB.update(key.id, { plan: "business" })
        const seen = yield* eventually(
          processA.authenticate(Redacted.make(secret)),
          (key) => Option.isSome(key) && key.value.plan === "business"
        )
        assert.strictEqual(Option.getOrThrow(seen).plan, "business")
        assert.deepStrictEqual(Option.getOrThrow(seen).limits, { perMinute: 1_000, perDay: 100_000 })
      }))

    it.effect("a lookup in flight while its key is revoked does not put the key back in the cache", () =>
      Effect.gen(function*() {
        const database = yield* Database
        const looked = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        let holdLookups = false
        // The lookup reads the key while it is live, then waits until the revocation is done before it answers.
        const holding: Database["Service"] = {
          ...database,
          query: (statement) =>
            holdLookups && statement.text.includes("WHERE secret_hash")
              ? database.query(statement).pipe(
                Effect.tap(() => Deferred.succeed(looked, undefined)),
                Effect.tap(() => Deferred.await(gate))
              )
              : database.query(statement)
        } as Database["Service"]
        const keys = yield* Layer.build(
          ApiKeys.layer.pipe(Layer.provide(Layer.succeed(Database, holding)), Layer.fresh)
        ).pipe(
          Effect.map((context) => context.mapUnsafe.get(ApiKeys.key) as ApiKeys["Service"])
        )
        const { key, secret } = yield* keys.create({ plan: "pro" })

        holdLookups = true
        const inFlight = yield* Effect.forkChild(keys.authenticate(Redacted.make(secret)))
        yield* Deferred.await(looked)
        holdLookups = false
        assert.isTrue(yield* keys.revoke(key.id))
        yield* Deferred.succeed(gate, undefined)
        // The request in flight began before the revocation and may go on; the next one may not.
        assert.isTrue(Option.isSome(yield* Fiber.join(inFlight)))
        assert.isTrue(
          Option.isNone(yield* keys.authenticate(Redacted.make(secret))),
          "revoked key served from the cache"
        )
      }))

    it.effect("refuses secrets that are not keys without asking the database", () =>
      Effect.gen(function*() {
        const [keys] = yield* twoProcesses()
        assert.isTrue(Option.isNone(yield* keys.authenticate(Redacted.make("not-a-key"))))
        assert.isTrue(Option.isNone(yield* keys.authenticate(Redacted.make(""))))
      }))

    it.effect("keeps enterprise limits when only the name of the plan is repeated", () =>
      Effect.gen(function*() {
        const [keys] = yield* twoProcesses()
        const { key } = yield* keys.create({ plan: "enterprise", limits: { perMinute: 5, perDay: 50 } })
        const updated = yield* keys.update(key.id, { plan: "enterprise" })
        assert.deepStrictEqual(Option.getOrThrow(updated).limits, { perMinute: 5, perDay: 50 })
      }))
  })
})
