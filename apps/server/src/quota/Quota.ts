import type { QuotaLimits } from "@petstore/contract"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ApiKey } from "../auth/ApiKeys.ts"
import { AppConfig, quotaStoreKind } from "../config.ts"
import type { StartupError } from "../startupError.ts"
import type { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { recordQuotaStoreDuration } from "../observability/metrics.ts"
import { traced } from "../observability/spans.ts"
import { ADDRESS_SUBJECT_PREFIX, DAY_MILLIS, MINUTE_MILLIS, QuotaStore } from "./QuotaStore.ts"

/** Who spends quota: an API key, or the address of a client that has no valid key. */
export interface QuotaSubject {
  readonly id: string
  readonly perMinute: number
  /** Only keys have a daily window. */
  readonly perDay: Option.Option<number>
  /** Only keys are banned: an address has nothing to revoke. */
  readonly bannable: boolean
}

export interface WindowState {
  readonly limit: number
  readonly used: number
  readonly remaining: number
  /** Unix milliseconds at which the window resets. */
  readonly resetAt: number
}

export interface QuotaDecision {
  readonly admitted: boolean
  /** Unix milliseconds at which the decision was made. */
  readonly now: number
  readonly minute: WindowState
  readonly day: Option.Option<WindowState>
  readonly bannedUntil: Option.Option<number>
}

const UNLIMITED = 2_147_483_647

const windowState = (limit: number, used: number, start: number, length: number): WindowState => ({
  limit,
  used,
  remaining: Math.max(0, limit - used),
  resetAt: start + length
})

/**
 * Fixed windows aligned to UTC, the minute and the day. An admitted request
 * counts once in both; a refused one spends nothing. A key that keeps sending
 * while limited (more than its ban threshold of refusals in one minute) is
 * banned for a while. Time comes from `Clock`, so tests move it with `TestClock`.
 */
export class Quota extends Context.Service<Quota, {
  readonly keySubject: (key: ApiKey) => QuotaSubject
  readonly addressSubject: (address: string) => QuotaSubject
  /** Spends one request if the subject may make it. */
  readonly admit: (subject: QuotaSubject) => Effect.Effect<QuotaDecision, DatabaseError>
  /** The subject's windows, spending nothing. */
  readonly peek: (subject: QuotaSubject) => Effect.Effect<QuotaDecision, DatabaseError>
  readonly unban: (subject: QuotaSubject) => Effect.Effect<void, DatabaseError>
}>()("@petstore/server/quota/Quota") {
  static readonly layer = Layer.effect(
    Quota,
    Effect.gen(function*() {
      const store = yield* QuotaStore
      const config = yield* AppConfig
      const banMillis = config.banSeconds * 1000

      const keySubject = (key: ApiKey): QuotaSubject => limitsSubject(`key:${key.id}`, key.limits)
      const limitsSubject = (id: string, limits: QuotaLimits): QuotaSubject => ({
        id,
        perMinute: limits.perMinute,
        perDay: Option.some(limits.perDay),
        bannable: true
      })
      const addressSubject = (address: string): QuotaSubject => ({
        id: `${ADDRESS_SUBJECT_PREFIX}${address}`,
        perMinute: config.anonymousPerMinute,
        perDay: Option.none(),
        bannable: false
      })

      const decide = (consume: boolean) =>
        Effect.fnUntraced(function*(subject: QuotaSubject) {
          const now = yield* Clock.currentTimeMillis
          const started = performance.now()
          const admission = yield* store.admit({
            subject: subject.id,
            now,
            perMinute: subject.perMinute,
            perDay: Option.getOrElse(subject.perDay, () => UNLIMITED),
            banThreshold: subject.bannable ? Option.getOrElse(config.banThreshold, () => subject.perMinute) : UNLIMITED,
            banMillis,
            consume
          })
          yield* recordQuotaStoreDuration(store.kind, (performance.now() - started) / 1000)
          return {
            admitted: admission.admitted,
            now: admission.decidedAt ?? now,
            minute: windowState(subject.perMinute, admission.minuteCount, admission.minuteStart, MINUTE_MILLIS),
            day: Option.map(subject.perDay, (perDay) =>
              windowState(perDay, admission.dayCount, admission.dayStart, DAY_MILLIS)),
            bannedUntil: Option.fromNullishOr(admission.bannedUntil)
          } satisfies QuotaDecision
        }, traced("Quota.decide"))

      return Quota.of({
        keySubject,
        addressSubject,
        admit: decide(true),
        peek: decide(false),
        unban: (subject) => store.unban(subject.id)
      })
    })
  )

  /**
   * The configured store's quota, with the database. Redis is connected while the database opens (the two
   * layers are merged, and a merge builds concurrently): a Redis that cannot be reached stops the start-up as
   * soon as its connection fails, not after the database has opened and migrated, and the database's opening
   * is interrupted (PGlite's own opening, once begun, finishes first: a half-created DATA_DIR is never left),
   * as Redis's connecting is when the database fails first. The listeners open only once both are up. The
   * other stores count in the database or beside it, so they are built once it is ready.
   */
  static readonly layerWithDatabase = <E>(
    database: Layer.Layer<Database, E, AppConfig>
  ): Layer.Layer<Quota | Database, E | StartupError, AppConfig> =>
    Layer.unwrap(Effect.gen(function*() {
      const kind = quotaStoreKind(yield* AppConfig)
      if (kind === "redis") {
        // Imported only when chosen: the `redis` client is some 600 modules and 1.7 MB of source text held in the heap.
        const { RedisQuotaStore } = yield* Effect.promise(() => import("./redis/RedisQuotaStore.ts"))
        return Layer.merge(Quota.layer.pipe(Layer.provide(RedisQuotaStore.layerFromConfig)), database)
      }
      const store = kind === "postgres" ? QuotaStore.postgres : QuotaStore.memory
      return Quota.layer.pipe(Layer.provide(store), Layer.provideMerge(database))
    }))
}
