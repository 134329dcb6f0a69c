import { assert, describe, it, layer } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Database } from "../src/db/Database.ts"
import { sql } from "../src/db/sql.ts"
import { type AdmitRequest, DAY_MILLIS, MINUTE_MILLIS, QuotaStore } from "../src/quota/QuotaStore.ts"
import { backends, suiteOptions } from "./support/databases.ts"
import { testDatabase } from "./support/layers.ts"

/** Past an expiry by the grace and the minute a forgotten subject is filed under. */
const PAST_GRACE = 3 * MINUTE_MILLIS

const admit = (subject: string, extra: Partial<AdmitRequest> = {}) =>
  Effect.gen(function*() {
    const store = yield* QuotaStore
    return yield* store.admit({
      subject,
      now: yield* Clock.currentTimeMillis,
      perMinute: 5,
      perDay: 100,
      banThreshold: 1,
      banMillis: 15 * MINUTE_MILLIS,
      consume: true,
      ...extra
    })
  })

const expire = Effect.gen(function*() {
  const store = yield* QuotaStore
  return yield* store.expire
})

describe("quota expiry in the in-memory store", () => {
  // A store of its own per test: what `expire` forgets is then only the test's.
  it.effect("forgets addresses by itself as admissions go on, a few per admission, however many there are", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 5_000; i++) yield* admit(`address:burst-${i}`)
      yield* TestClock.adjust(MINUTE_MILLIS + PAST_GRACE)
      // 5,000 due, 64 drained per admission: 100 admissions drain them all without a sweep.
      for (let i = 0; i < 100; i++) yield* admit("address:steady")
      assert.strictEqual(yield* expire, 0)
    }).pipe(Effect.provide(QuotaStore.memory)))

  it.effect("forgets expired subjects, and only those", () =>
    Effect.gen(function*() {
      yield* admit("address:a")
      yield* admit("key:a")
      yield* TestClock.adjust(MINUTE_MILLIS + PAST_GRACE)
      assert.strictEqual(yield* expire, 1)
      assert.strictEqual((yield* admit("key:a")).dayCount, 2)
      yield* TestClock.adjust(DAY_MILLIS)
      assert.strictEqual(yield* expire, 1)
      assert.strictEqual((yield* admit("key:a")).dayCount, 1)
    }).pipe(Effect.provide(QuotaStore.memory)))

  it.effect("keeps a ban until it ends, past every window", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust(DAY_MILLIS - 5 * MINUTE_MILLIS)
      for (let i = 0; i < 3; i++) yield* admit("key:banned", { perMinute: 1, perDay: 1 })
      yield* TestClock.adjust(5 * MINUTE_MILLIS + PAST_GRACE)
      assert.strictEqual(yield* expire, 0)
      yield* TestClock.adjust(15 * MINUTE_MILLIS)
      assert.strictEqual(yield* expire, 1)
    }).pipe(Effect.provide(QuotaStore.memory)))
})

for (const { name } of backends) {
  describe(`quota expiry in the PostgreSQL store on ${name}`, suiteOptions(name), () => {
    const held = (subject: string) =>
      Effect.gen(function*() {
        const db = yield* Database
        return (yield* db.query(sql`SELECT 1 FROM quota_usage WHERE subject = ${subject}`)).length > 0
      })
    /**
     * Whether the subject's row is gone once the sweeps are done. The store's
     * own sweep runs as the TestClock moves; moving it far also times out that
     * sweep's statement (the query timeout is on the same clock) while the
     * statement still runs in PostgreSQL, holding the rows it deletes, which
     * another sweep skips (SKIP LOCKED). Such a statement finishes in real time:
     * wait for it, a bounded while.
     */
    const gone = (subject: string) =>
      Effect.gen(function*() {
        for (let attempt = 0; attempt < 200; attempt++) {
          yield* expire
          if (!(yield* held(subject))) return true
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
        }
        return false
      })
    layer(QuotaStore.postgres.pipe(Layer.provideMerge(testDatabase(name))), { timeout: 120_000 })((it) => {
      it.effect("deletes an address's row once its minute and the grace are past, and a key's after its day", () =>
        Effect.gen(function*() {
          yield* admit("address:pg-a")
          yield* admit("key:pg-a")
          yield* TestClock.adjust(MINUTE_MILLIS)
          yield* expire
          assert.isTrue(yield* held("address:pg-a"), "kept through the grace")
          yield* TestClock.adjust(PAST_GRACE)
          assert.isTrue(yield* gone("address:pg-a"))
          assert.isTrue(yield* held("key:pg-a"))
          assert.strictEqual((yield* admit("address:pg-a")).minuteCount, 1)
          assert.strictEqual((yield* admit("key:pg-a")).dayCount, 2)
          yield* TestClock.adjust(DAY_MILLIS)
          assert.isTrue(yield* gone("key:pg-a"))
        }))

      it.effect("keeps a ban until it ends, past every window", () =>
        Effect.gen(function*() {
          yield* TestClock.adjust(2 * DAY_MILLIS - 5 * MINUTE_MILLIS)
          for (let i = 0; i < 3; i++) yield* admit("key:pg-banned", { perMinute: 1, perDay: 1 })
          yield* TestClock.adjust(5 * MINUTE_MILLIS + PAST_GRACE)
          yield* expire
          assert.isTrue(yield* held("key:pg-banned"))
          yield* TestClock.adjust(15 * MINUTE_MILLIS)
          assert.isTrue(yield* gone("key:pg-banned"))
        }))

      it.effect("sweeps by itself, in bounded batches, until none is left", () =>
        Effect.gen(function*() {
          const db = yield* Database
          yield* TestClock.adjust(3 * DAY_MILLIS)
          const now = yield* Clock.currentTimeMillis
          yield* db.query(sql`INSERT INTO quota_usage (subject, minute_start, day_start)
            SELECT 'address:bulk-' || n, ${now}::bigint, ${now}::bigint FROM generate_series(1, 2500) AS n`)
          // The store's own sweep, on the server's clock, runs as time passes; `expire` finishes what it left.
          yield* TestClock.adjust(MINUTE_MILLIS + PAST_GRACE)
          assert.isTrue(yield* gone("address:bulk-2500"))
          const [left] = yield* db.query<{ count: number }>(
            sql`SELECT count(*)::integer AS count FROM quota_usage WHERE subject LIKE 'address:bulk-%'`
          )
          assert.strictEqual(left!.count, 0)
        }))
    })
  })
}
