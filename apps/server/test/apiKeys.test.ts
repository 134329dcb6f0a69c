import { assert, layer } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { MAX_KEY_LIFETIME_SECONDS } from "@petstore/contract"
import { createHash, randomBytes } from "node:crypto"
import { ApiKeys, EXPIRED_KEY_RETENTION_DAYS, KEY_CACHE_TTL_MILLIS } from "../src/auth/ApiKeys.ts"
import { hasValidChecksum, KEY_PATTERN } from "../src/auth/keyFormat.ts"
import { KeyExpiryRefused, KeyMissing } from "../src/auth/KeyRefusals.ts"
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
    it.effect("stores only a hash: the secret is psk_, 256 random bits in base62 and a checksum, never in the table", () =>
      Effect.gen(function*() {
        const [keys] = yield* twoProcesses()
        const { key, secret } = yield* keys.create({ plan: "free" })
        assert.match(secret, KEY_PATTERN)
        assert.isTrue(hasValidChecksum(secret))
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
        yield* processB.revoke(key.id)
        const seen = yield* eventually(processA.authenticate(Redacted.make(secret)), Option.isNone)
        assert.isTrue(Option.isNone(seen), "revoked without the cache lifetime passing")
        // A revoked key is missing to every change, a second revocation included.
        const missing = new KeyMissing({ keyId: key.id })
        assert.deepStrictEqual(yield* Effect.flip(processB.revoke(key.id)), missing)
        assert.deepStrictEqual(yield* Effect.flip(processA.roll(key.id, 60)), missing)
        assert.deepStrictEqual(yield* Effect.flip(processA.update(key.id, { plan: "pro" })), missing)
      }))

    it.effect("should an announcement be lost, a revocation still reaches every process within the cache lifetime", () =>
      Effect.gen(function*() {
        const [processA, processB] = yield* twoProcesses({ deaf: true })
        const { key, secret } = yield* processA.create({ plan: "pro" })
        assert.isTrue(Option.isSome(yield* processA.authenticate(Redacted.make(secret))))

        yield* processB.revoke(key.id)
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
            holdLookups && statement.text.includes("WHERE (secret_hash =")
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
        yield* keys.revoke(key.id)
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
        assert.deepStrictEqual(updated.limits, { perMinute: 5, perDay: 50 })
      }))

    /** The TestClock moves on from test to test: times are relative to the test's start. */
    let start = 0
    const begin = Effect.map(Clock.currentTimeMillis, (now) => {
      start = now
    })
    const at = (millis: number) => new Date(start + millis).toISOString()
    const works = (keys: ApiKeys["Service"], secret: string) =>
      Effect.map(keys.authenticate(Redacted.make(secret)), Option.isSome)

    it.effect("an expiring key works until its expiresAt, then is refused by every process, cached or not", () =>
      Effect.gen(function*() {
        yield* begin
        const [processA, processB] = yield* twoProcesses({ deaf: true })
        const { key, secret } = yield* processB.create({ plan: "pro", expiresAt: at(60_000) })
        assert.strictEqual(key.expiresAt?.toISOString(), at(60_000))
        assert.isTrue(yield* works(processA, secret))
        assert.isTrue(yield* works(processB, secret))
        yield* TestClock.adjust(59_999)
        assert.isTrue(yield* works(processA, secret))
        yield* TestClock.adjust(1)
        assert.isFalse(yield* works(processA, secret), "expired, though announced nowhere and cached")
        assert.isFalse(yield* works(processB, secret))
        assert.deepStrictEqual((yield* processA.list("expired")).map((listed) => listed.id), [key.id])
        assert.notInclude((yield* processA.list()).map((listed) => listed.id), key.id)
      }))

    it.effect("refuses an expiresAt in the past or beyond the maximum, and clears one with null", () =>
      Effect.gen(function*() {
        yield* begin
        const [keys] = yield* twoProcesses()
        for (const expiresAt of [at(0), at(MAX_KEY_LIFETIME_SECONDS * 1_000 + 1)]) {
          const refused = yield* Effect.flip(keys.create({ plan: "free", expiresAt }))
          assert.instanceOf(refused, KeyExpiryRefused)
        }
        const { key, secret } = yield* keys.create({ plan: "free", expiresAt: at(MAX_KEY_LIFETIME_SECONDS * 1_000) })
        const cleared = yield* keys.update(key.id, { expiresAt: null })
        assert.isNull(cleared.expiresAt)
        assert.isTrue(yield* works(keys, secret))
      }))

    it.effect("purges keys expired for longer than the retention, and only those", () =>
      Effect.gen(function*() {
        yield* begin
        const [keys] = yield* twoProcesses()
        const soon = yield* keys.create({ plan: "free", expiresAt: at(1_000) })
        const later = yield* keys.create({ plan: "free", expiresAt: at(5 * 86_400_000) })
        yield* TestClock.adjust(EXPIRED_KEY_RETENTION_DAYS * 86_400_000 + 2_000)
        yield* keys.sweep
        const expired = (yield* keys.list("expired")).map((listed) => listed.id)
        assert.notInclude(expired, soon.key.id)
        assert.include(expired, later.key.id)
        assert.deepStrictEqual(yield* Effect.flip(keys.find(soon.key.id)), new KeyMissing({ keyId: soon.key.id }))
      }))

    it.effect("rolling: two processes take the old secret until the overlap ends, then refuse it", () =>
      Effect.gen(function*() {
        yield* begin
        for (const deaf of [false, true]) {
          const [processA, processB] = yield* twoProcesses({ deaf })
          const { key, secret: old } = yield* processA.create({ plan: "business", role: "staff" })
          assert.isTrue(yield* works(processA, old))
          assert.isTrue(yield* works(processB, old))
          const rolled = yield* processB.roll(key.id, 3_600)
          assert.strictEqual(rolled.key.id, key.id)
          assert.strictEqual(rolled.key.plan, "business")
          assert.strictEqual(rolled.key.role, "staff")
          assert.strictEqual(
            rolled.key.previousKeyExpiresAt?.toISOString(),
            new Date((yield* Clock.currentTimeMillis) + 3_600_000).toISOString()
          )
          assert.notStrictEqual(rolled.secret, old)
          for (const process of [processA, processB]) {
            assert.isTrue(yield* works(process, rolled.secret))
            assert.isTrue(yield* works(process, old), "the old secret works during the overlap")
          }
          yield* TestClock.adjust(3_600_000 - 1)
          assert.isTrue(yield* works(processA, old))
          assert.isTrue(yield* works(processB, old))
          yield* TestClock.adjust(1)
          assert.isFalse(yield* works(processA, old), "refused by the first process at the overlap's end")
          assert.isFalse(yield* works(processB, old), "refused by the second process at the overlap's end")
          assert.isTrue(yield* works(processA, rolled.secret))
          assert.isTrue(yield* works(processB, rolled.secret))
        }
      }))

    it.effect("rolling again during an overlap ends the older one at once: at most two secrets live", () =>
      Effect.gen(function*() {
        yield* begin
        const [processA, processB] = yield* twoProcesses()
        const first = yield* processA.create({ plan: "free" })
        const second = yield* processA.roll(first.key.id, 86_400)
        assert.isTrue(yield* works(processB, first.secret))
        const third = yield* processA.roll(first.key.id, 86_400)
        const seen = yield* eventually(works(processB, first.secret), (works) => !works)
        assert.isFalse(seen, "the first secret ended at the second roll")
        assert.isFalse(yield* works(processA, first.secret))
        assert.isTrue(yield* works(processB, second.secret))
        assert.isTrue(yield* works(processB, third.secret))
        const cut = yield* processA.roll(first.key.id, 0)
        assert.isNull(cut.key.previousKeyExpiresAt)
        assert.isFalse(yield* works(processA, third.secret), "no overlap: the secret before ends now")
        assert.isTrue(yield* works(processA, cut.secret))
      }))

    it.effect("keys issued before the checksum stay valid; a key with a broken checksum is refused unread", () =>
      Effect.gen(function*() {
        yield* begin
        const [keys] = yield* twoProcesses()
        const database = yield* Database
        const legacy = `psk_${randomBytes(32).toString("base64url")}`
        yield* database.query({
          text: "INSERT INTO api_keys (id, secret_hash, name, plan) VALUES ($1, $2, '', 'free')",
          values: [`key_${randomBytes(8).toString("hex")}`, createHash("sha256").update(legacy).digest("hex")]
        })
        assert.isTrue(yield* works(keys, legacy))
        const { secret } = yield* keys.create({ plan: "free" })
        const last = secret.at(-1)!
        const broken = secret.slice(0, -1) + (last === "0" ? "1" : "0")
        assert.isFalse(hasValidChecksum(broken))
        assert.isFalse(yield* works(keys, broken))
      }))

    it.effect("last use: noted per request, written by each process at most once a minute per key", () =>
      Effect.gen(function*() {
        yield* begin
        const [keys, other] = yield* twoProcesses()
        const database = yield* Database
        const { key, secret } = yield* keys.create({ plan: "free" })
        assert.isNull((yield* keys.find(key.id)).lastUsedAt)
        yield* TestClock.adjust(5_000)
        for (let i = 0; i < 5; i++) yield* works(keys, secret)
        assert.strictEqual((yield* keys.find(key.id)).lastUsedAt?.toISOString(), at(5_000))
        assert.isNull((yield* other.find(key.id)).lastUsedAt, "no write per request")
        assert.strictEqual(yield* keys.flushLastUse, 1)
        assert.strictEqual((yield* other.find(key.id)).lastUsedAt?.toISOString(), at(5_000))
        yield* TestClock.adjust(30_000)
        yield* works(keys, secret)
        assert.strictEqual(yield* keys.flushLastUse, 0, "written less than a minute ago")
        yield* TestClock.adjust(30_000)
        assert.strictEqual(yield* keys.flushLastUse, 1)
        const [row] = yield* database.query<{ readonly last_used_at: Date | string }>({
          text: "SELECT last_used_at FROM api_keys WHERE id = $1",
          values: [key.id]
        })
        assert.strictEqual(new Date(row!.last_used_at).toISOString(), at(35_000))
      }))
  })
})
