import { assert, describe, layer } from "@effect/vitest"
import { type ApiKeyId, type Plan, planQuotas, type QuotaLimits } from "@petstore/contract"
import { Clock, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import type { ApiKey } from "../../src/auth/ApiKeys.ts"
import { AppConfig } from "../../src/config.ts"
import { retryAfterSeconds } from "../../src/http/rateLimitHeaders.ts"
import { Quota } from "../../src/quota/Quota.ts"

/** A quota store under test: the suite runs once per store, as `quota with the <name>`. */
export interface QuotaStoreUnderTest {
  readonly name: string
  readonly layer: Layer.Layer<Quota, unknown>
  readonly options: { readonly tags?: Array<string>; readonly skip?: boolean }
}

/** The configuration every store's quota runs with. */
export const quotaConfig = AppConfig.layerWith({ banSeconds: 900, banThreshold: Option.none(), anonymousPerMinute: 60 })

const MINUTE = 60_000
const DAY = 86_400_000
let keys = 0

const keyOf = (
  plan: Plan,
  limits: QuotaLimits = plan === "enterprise" ? { perMinute: 3, perDay: 5 } : planQuotas[plan]
): ApiKey => ({
  id: `key_${String(++keys).padStart(16, "0")}` as ApiKeyId,
  name: "",
  plan,
  role: "customer",
  expiresAt: null,
  previousKeyExpiresAt: null,
  lastUsedAt: null,
  limits,
  createdAt: new Date(0)
})

/** The clock of a host whose wall clock is `lagMillis` behind: a fleet's hosts never agree exactly. */
const clockBehind = (clock: Clock.Clock, lagMillis: number): Clock.Clock => {
  const behind: Clock.Clock = Object.create(clock)
  return Object.assign(behind, {
    currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe() - lagMillis,
    currentTimeMillis: Effect.sync(() => clock.currentTimeMillisUnsafe() - lagMillis),
    currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe() - BigInt(lagMillis) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => clock.currentTimeNanosUnsafe() - BigInt(lagMillis) * 1_000_000n)
  })
}

/** Admits `count` requests one after another and returns the last decision. */
const admitMany = (quota: Quota["Service"], key: ApiKey, count: number) =>
  Effect.gen(function*() {
    let last = yield* quota.admit(quota.keySubject(key))
    for (let i = 1; i < count; i++) last = yield* quota.admit(quota.keySubject(key))
    return last
  })

export const describeQuota = (stores: ReadonlyArray<QuotaStoreUnderTest>) => {
  for (const { name, layer: quotaLayer, options } of stores) {
    describe(`quota with the ${name}`, options, () => {
      layer(quotaLayer, { timeout: 300_000 })((it) => {
        it.effect.each(["free", "pro", "business"] as const)(
          "%s: the (limit+1)-th request in a minute is refused until the minute resets",
          (plan) =>
            Effect.gen(function*() {
              const quota = yield* Quota
              const key = keyOf(plan)
              yield* TestClock.adjust(20_000) // 20 s into a minute
              const last = yield* admitMany(quota, key, planQuotas[plan].perMinute)
              assert.isTrue(last.admitted)
              assert.strictEqual(last.minute.remaining, 0)

              const refused = yield* quota.admit(quota.keySubject(key))
              assert.isFalse(refused.admitted)
              assert.strictEqual(retryAfterSeconds(refused), 40)

              yield* TestClock.adjust(40_000)
              const afterReset = yield* quota.admit(quota.keySubject(key))
              assert.isTrue(afterReset.admitted)
              assert.strictEqual(afterReset.minute.remaining, planQuotas[plan].perMinute - 1)
            })
        )

        it.effect("a refused request spends nothing, in either window", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("enterprise", { perMinute: 2, perDay: 100 })
            yield* admitMany(quota, key, 2)
            yield* quota.admit(quota.keySubject(key))
            const seen = yield* quota.peek(quota.keySubject(key))
            assert.strictEqual(seen.minute.used, 2)
            assert.strictEqual(Option.getOrThrow(seen.day).used, 2)
          }))

        it.effect("the daily limit binds while the minute still has room", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("free")
            const now = yield* Clock.currentTimeMillis
            yield* TestClock.adjust(DAY - (now % DAY)) // the start of a day
            for (let minute = 0; minute < 20; minute++) {
              yield* admitMany(quota, key, 50)
              yield* TestClock.adjust(MINUTE)
            }
            const refused = yield* quota.admit(quota.keySubject(key))
            assert.isFalse(refused.admitted)
            assert.strictEqual(refused.minute.remaining, 60)
            assert.strictEqual(Option.getOrThrow(refused.day).remaining, 0)
            assert.strictEqual(retryAfterSeconds(refused), (DAY - 20 * MINUTE) / 1000)

            yield* TestClock.adjust(DAY - 20 * MINUTE)
            assert.isTrue((yield* quota.admit(quota.keySubject(key))).admitted)
          }))

        it.effect("enterprise keys use their own limits", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("enterprise", { perMinute: 3, perDay: 4 })
            assert.isTrue((yield* admitMany(quota, key, 3)).admitted)
            assert.isFalse((yield* quota.admit(quota.keySubject(key))).admitted)
            yield* TestClock.adjust(MINUTE)
            const fourth = yield* quota.admit(quota.keySubject(key))
            assert.isTrue(fourth.admitted)
            assert.strictEqual(Option.getOrThrow(fourth.day).remaining, 0)
            assert.isFalse((yield* quota.admit(quota.keySubject(key))).admitted)
          }))

        it.effect("a plan change applies to the next request and keeps the counts of the current windows", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("free")
            yield* admitMany(quota, key, 60)
            assert.isFalse((yield* quota.admit(quota.keySubject(key))).admitted)
            const upgraded = { ...key, plan: "pro" as const, limits: planQuotas.pro }
            const next = yield* quota.admit(quota.keySubject(upgraded))
            assert.isTrue(next.admitted)
            assert.strictEqual(next.minute.used, 61)
            assert.strictEqual(next.minute.remaining, 300 - 61)
          }))

        it.effect("a key that keeps sending while limited is banned; the ban lasts BAN_SECONDS and outlives the window", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("enterprise", { perMinute: 2, perDay: 1000 })
            yield* admitMany(quota, key, 2)
            // The ban threshold defaults to the per-minute limit: two refusals are tolerated, the third bans.
            assert.isTrue(Option.isNone((yield* admitMany(quota, key, 2)).bannedUntil))
            const banned = yield* quota.admit(quota.keySubject(key))
            assert.isTrue(Option.isSome(banned.bannedUntil))
            assert.strictEqual(retryAfterSeconds(banned), 900)

            yield* TestClock.adjust(MINUTE)
            const stillBanned = yield* quota.admit(quota.keySubject(key))
            assert.isFalse(stillBanned.admitted)
            assert.strictEqual(retryAfterSeconds(stillBanned), 840)
            assert.isTrue(Option.isSome((yield* quota.peek(quota.keySubject(key))).bannedUntil))

            yield* TestClock.adjust(840_000)
            assert.isTrue((yield* quota.admit(quota.keySubject(key))).admitted)
          }))

        it.effect("a client that honours Retry-After is never banned", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("enterprise", { perMinute: 1, perDay: 1000 })
            for (let round = 0; round < 30; round++) {
              let decision = yield* quota.admit(quota.keySubject(key))
              while (decision.admitted) decision = yield* quota.admit(quota.keySubject(key))
              assert.isTrue(Option.isNone(decision.bannedUntil))
              yield* TestClock.adjust(retryAfterSeconds(decision) * 1000)
            }
          }))

        it.effect("unban lifts a ban at once", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const key = keyOf("enterprise", { perMinute: 1, perDay: 1000 })
            yield* admitMany(quota, key, 3)
            assert.isTrue(Option.isSome((yield* quota.peek(quota.keySubject(key))).bannedUntil))
            yield* quota.unban(quota.keySubject(key))
            yield* TestClock.adjust(MINUTE)
            assert.isTrue((yield* quota.admit(quota.keySubject(key))).admitted)
          }))

        it.effect("admits exactly the limit of many requests sent at once (the PostgreSQL store batches them, Redis pipelines them)", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const free = keyOf("free")
            const pro = keyOf("pro")
            const decisions = yield* Effect.all(
              Array.from({ length: 400 }, (_, i) => quota.admit(quota.keySubject(i % 2 === 0 ? free : pro))),
              { concurrency: "unbounded" }
            )
            const admitted = (parity: number) => decisions.filter((d, i) => i % 2 === parity && d.admitted).length
            assert.strictEqual(admitted(0), 60)
            assert.strictEqual(admitted(1), 200)
          }))

        it.effect("hosts whose clocks differ by 2 s admit exactly the plan in each window across a minute and day boundary", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const subject = quota.keySubject(keyOf("free"))
            const now = yield* Clock.currentTimeMillis
            const boundary = now - (now % DAY) + DAY
            yield* TestClock.adjust(boundary - now - 10_000) // 10 s before midnight UTC
            const lagging = clockBehind(yield* Clock.Clock, 2_000)
            let admitted = 0
            // 20 s of requests, one every 100 ms, alternating between a host on time and one 2 s behind.
            // Each window sees 100 of them: 60 admitted, 40 refused, too few refusals for a ban.
            for (let step = 0; step < 200; step++) {
              const admit = quota.admit(subject)
              const decision = yield* (step % 2 === 0 ? admit : Effect.provideService(admit, Clock.Clock, lagging))
              if (decision.admitted) admitted++
              yield* TestClock.adjust(100)
            }
            assert.strictEqual(admitted, 120)
            const after = yield* quota.peek(subject)
            assert.strictEqual(after.minute.used, 60)
            assert.strictEqual(Option.getOrThrow(after.day).used, 60)
          }))

        it.effect("counts a subject whose name holds quotes, commas and backslashes as itself", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const subject = quota.addressSubject(`198.51.100.7", "x\\"},{"y ${++keys}`)
            yield* Effect.all([quota.admit(subject), quota.admit(subject)], { concurrency: "unbounded" })
            assert.strictEqual((yield* quota.peek(subject)).minute.used, 2)
          }))

        it.effect("client addresses get the anonymous limit, a minute window only, and are never banned", () =>
          Effect.gen(function*() {
            const quota = yield* Quota
            const subject = quota.addressSubject(`192.0.2.${++keys % 250}`)
            for (let i = 0; i < 60; i++) assert.isTrue((yield* quota.admit(subject)).admitted)
            for (let i = 0; i < 200; i++) {
              const refused = yield* quota.admit(subject)
              assert.isFalse(refused.admitted)
              assert.isTrue(Option.isNone(refused.bannedUntil))
              assert.isTrue(Option.isNone(refused.day))
            }
          }))
      })
    })
  }
}
