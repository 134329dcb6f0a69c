import { assert, describe, it } from "@effect/vitest"
import { startRedis, type TestRedis } from "@petstore/test-support"
import { Effect, Exit, Result, Schedule } from "effect"
import { DatabaseError } from "../src/db/DatabaseError.ts"
import { parseRedisUrl } from "../src/net/redisUrl.ts"
import { type AdmitRequest, DAY_MILLIS, EXPIRY_GRACE_MILLIS, QuotaStore } from "../src/quota/QuotaStore.ts"
import { RedisQuotaStore, type RedisQuotaStoreOptions, subjectKey } from "../src/quota/redis/RedisQuotaStore.ts"
import { redisSuiteOptions } from "./support/layers.ts"

let subjects = 0
const admission = (subject: string, extra: Partial<AdmitRequest> = {}): AdmitRequest => ({
  subject,
  now: Date.now(),
  perMinute: 5,
  perDay: 100,
  banThreshold: 1,
  banMillis: 900_000,
  consume: true,
  ...extra
})

/** A Redis of the test's own for the effect, and the store on it. */
const withRedis = <A, E>(
  options: { readonly cluster?: boolean; readonly store?: Partial<RedisQuotaStoreOptions> },
  body: (redis: TestRedis) => Effect.Effect<A, E, QuotaStore>
) =>
  Effect.acquireUseRelease(
    Effect.promise(() => startRedis({ cluster: options.cluster ?? false })),
    (redis) =>
      body(redis).pipe(
        Effect.provide(RedisQuotaStore.layer({
          type: options.cluster ? "cluster" : "single",
          url: Result.getOrThrow(parseRedisUrl(redis.url)),
          clock: "store",
          timeoutMillis: 1_000,
          failure: "closed",
          ...options.store
        }))
      ),
    (redis) => Effect.promise(() => redis.stop())
  )

const admit = (request: AdmitRequest) => QuotaStore.use((store) => store.admit(request))

describe("the redis quota store", redisSuiteOptions(), () => {
  it.live(
    "decides on Redis's clock, not the caller's: a host whose clock is a day off still counts in the current window",
    () =>
      withRedis({}, () =>
        Effect.gen(function*() {
          const before = Date.now()
          const decision = yield* admit(admission("key:clock", { now: before - DAY_MILLIS }))
          const after = Date.now()
          assert.isDefined(decision.decidedAt)
          // Redis runs on this machine: its clock is this process's, within the round trip.
          assert.isAtLeast(decision.decidedAt!, before - 1_000)
          assert.isAtMost(decision.decidedAt!, after + 1_000)
          assert.strictEqual(decision.minuteStart, decision.decidedAt! - (decision.decidedAt! % 60_000))
          assert.strictEqual(decision.dayStart, decision.decidedAt! - (decision.decidedAt! % DAY_MILLIS))
        })),
    { timeout: 120_000 }
  )

  it.live(
    "keeps one hash per subject, under the subject as hash tag, each with a TTL; a look spends nothing and writes nothing",
    () =>
      withRedis({}, (redis) =>
        Effect.gen(function*() {
          yield* admit(admission("key:ttl"))
          yield* admit(admission("address:192.0.2.1"))
          yield* admit(admission("key:only-looked-at", { consume: false }))
          const keys = (yield* Effect.promise(() => redis.nodes[0]!.cli("--scan"))).trim().split("\n").sort()
          assert.deepStrictEqual(keys, [subjectKey("address:192.0.2.1"), subjectKey("key:ttl")])
          const ttlOf = (key: string) => Effect.promise(async () => Number(await redis.nodes[0]!.cli("pttl", key)))
          const keyTtl = yield* ttlOf(subjectKey("key:ttl"))
          assert.isAbove(keyTtl, EXPIRY_GRACE_MILLIS)
          assert.isAtMost(keyTtl, DAY_MILLIS + EXPIRY_GRACE_MILLIS)
          const addressTtl = yield* ttlOf(subjectKey("address:192.0.2.1"))
          assert.isAbove(addressTtl, EXPIRY_GRACE_MILLIS)
          assert.isAtMost(addressTtl, 60_000 + EXPIRY_GRACE_MILLIS)
        })),
    { timeout: 120_000 }
  )

  it.live(
    "runs its script again after Redis forgot it (SCRIPT FLUSH, a restarted or new primary): EVALSHA falls back to EVAL",
    () =>
      withRedis({}, (redis) =>
        Effect.gen(function*() {
          assert.strictEqual((yield* admit(admission("key:flushed"))).minuteCount, 1)
          yield* Effect.promise(() => redis.nodes[0]!.cli("script", "flush"))
          assert.strictEqual((yield* admit(admission("key:flushed"))).minuteCount, 2)
        })),
    { timeout: 120_000 }
  )

  it.live(
    "a ban on a Cluster: every key of one subject on one slot, the ban and both windows decided together",
    () =>
      withRedis({ cluster: true }, () =>
        Effect.gen(function*() {
          const subject = `key:cluster-${++subjects}`
          for (let i = 0; i < 5; i++) assert.isTrue((yield* admit(admission(subject))).admitted)
          assert.isNull((yield* admit(admission(subject))).bannedUntil) // one refusal tolerated
          const banned = yield* admit(admission(subject))
          assert.isFalse(banned.admitted)
          assert.isNotNull(banned.bannedUntil)
          const store = yield* QuotaStore
          yield* store.unban(subject)
          const after = yield* admit(admission(subject, { consume: false }))
          assert.isNull(after.bannedUntil)
          assert.strictEqual(after.minuteCount, 5)
        })),
    { timeout: 180_000 }
  )

  it.live(
    "a subject too long to be one is refused alone, before Redis; the admissions sent with it are each counted once",
    () =>
      withRedis({}, () =>
        Effect.gen(function*() {
          const exits = yield* Effect.all(
            ["key:g", `address:${"x".repeat(2400)}`, "key:h", "key:g"].map((subject) =>
              Effect.exit(admit(admission(subject)))
            ),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(exits.map(Exit.isSuccess), [true, false, true, true])
          const counts = exits.flatMap((exit) => Exit.isSuccess(exit) ? [exit.value.minuteCount] : [])
          assert.deepStrictEqual(counts.sort(), [1, 1, 2])
        })),
    { timeout: 120_000 }
  )

  for (const failure of ["closed", "open"] as const) {
    it.live(
      `Redis gone: ${
        failure === "closed" ? "503 (an unavailable store)" : "admitted, counted in this process"
      }, at once, and back by itself once Redis is`,
      () =>
        withRedis({ store: { failure } }, (redis) =>
          Effect.gen(function*() {
            assert.isTrue((yield* admit(admission("key:outage"))).admitted)
            yield* Effect.promise(() => redis.nodes[0]!.kill())
            for (let i = 0; i < 20; i++) {
              const exit = yield* Effect.exit(admit(admission(`key:outage-${i}`)))
              if (failure === "closed") {
                assert.isTrue(Exit.isFailure(exit))
                const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
                assert.instanceOf(error && "error" in error ? error.error : undefined, DatabaseError)
                assert.isTrue((error as unknown as { error: DatabaseError }).error.unavailable)
              } else {
                assert.isTrue(Exit.isSuccess(exit) && exit.value.admitted)
              }
            }
            yield* Effect.promise(() => redis.nodes[0]!.restart())
            // Back by itself: the restarted Redis is empty, so the first admission it decides counts 1.
            const back = yield* admit(admission("key:after-outage")).pipe(
              Effect.flatMap((decision) =>
                decision.decidedAt === undefined ? Effect.fail("fallback") : Effect.succeed(decision)
              ),
              Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 600 })
            )
            assert.strictEqual(back.minuteCount, 1)
          })),
      { timeout: 180_000 }
    )
  }
})
