import { Context, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { AppConfig } from "../../config.ts"
import { DatabaseError } from "../../db/DatabaseError.ts"
import { recordQuotaStoreAvailability } from "../../observability/metrics.ts"
import { StartupError } from "../../startupError.ts"
import {
  ADDRESS_SUBJECT_PREFIX,
  type Admission,
  admissionProblem,
  type AdmitRequest,
  EXPIRY_GRACE_MILLIS,
  QuotaStore
} from "../QuotaStore.ts"
import { ADMIT_SCRIPT, ADMIT_SCRIPT_SHA1, UNBAN_SCRIPT, UNBAN_SCRIPT_SHA1 } from "./admitScript.ts"
import { connectRedis, isRedisUnavailable, type RedisConnection, type RedisTarget } from "./redisConnection.ts"

const admitScript = { text: ADMIT_SCRIPT, sha1: ADMIT_SCRIPT_SHA1 }
const unbanScript = { text: UNBAN_SCRIPT, sha1: UNBAN_SCRIPT_SHA1 }

/** Late answers in a row, with no answer in time between them, that mark the store unavailable. */
const LATE_ANSWERS_FOR_AN_OUTAGE = 3

class RedisTimeout extends Error {}

/** How often an unavailable store is asked whether it is back. */
const PROBE_EVERY = "500 millis"

/**
 * A subject's hash. The whole subject is the hash tag, so everything of one subject lands on one slot of a
 * Cluster (no operation is ever cross-slot). A subject holding `}` cuts its tag short: still one slot.
 */
export const subjectKey = (subject: string) => `quota:{${subject}}`

/** Redis did not answer in time, could not be reached, or could not serve the key: a 503, as a database outage is. */
export class QuotaStoreUnavailable extends Error {
  /** Read by `isUnavailable` (DatabaseError.ts) as it reads a socket's error code. */
  readonly code = "EQUOTASTORE"
}

const storeUnavailable = () =>
  new DatabaseError({ cause: new QuotaStoreUnavailable("The quota store (Redis) is unavailable") })

export interface RedisQuotaStoreOptions extends RedisTarget {
  /** `store`: Redis's `TIME` decides, one clock for every host. `caller`: the request's `now` (tests that move `TestClock`). */
  readonly clock: "store" | "caller"
  readonly timeoutMillis: number
  /** `closed`: 503 while Redis is unavailable. `open`: admit, counting in this process's memory meanwhile. */
  readonly failure: "closed" | "open"
}

const admissionOf = (reply: unknown, decidedByStore: boolean): Admission => {
  const [admitted, minuteStart, minuteCount, dayStart, dayCount, bannedUntil, now] = reply as Array<number>
  return {
    admitted: admitted === 1,
    minuteStart: minuteStart!,
    minuteCount: minuteCount!,
    dayStart: dayStart!,
    dayCount: dayCount!,
    bannedUntil: bannedUntil === -1 ? null : bannedUntil!,
    ...(decidedByStore ? { decidedAt: now! } : {})
  }
}

/**
 * Quota counts in Redis or Valkey, one server or a Cluster, shared by every server process. Each admission
 * is one script run (one round trip) that decides both windows and the ban together (`admitScript.ts`);
 * concurrent admissions share the connection, pipelined. Keys expire by themselves, so `expire` has nothing to do.
 *
 * The failure policy: a lost connection, a reply that says Redis cannot serve, or three answers in a row
 * later than `timeoutMillis` mark the store unavailable (a log line, `quota_store_available` 0); from then on
 * requests do not wait on Redis at all (503, or the per-process fallback) until a probe every 500 ms finds it
 * back (a log line, the gauge 1 again).
 */
export const makeRedisQuotaStore = Effect.fnUntraced(function*(
  connection: RedisConnection,
  options: Pick<RedisQuotaStoreOptions, "clock" | "timeoutMillis" | "failure">
) {
  const fallback = Context.get(yield* Layer.build(QuotaStore.memory), QuotaStore)
  let available = true
  yield* recordQuotaStoreAvailability("redis", true)

  const unavailable = (cause: unknown) =>
    Effect.gen(function*() {
      if (available) {
        available = false
        yield* recordQuotaStoreAvailability("redis", false)
        yield* Effect.logWarning("quota store unavailable").pipe(
          Effect.annotateLogs({
            store: "redis",
            policy: options.failure === "open" ? "admitting, counted per process" : "answering 503",
            cause: cause instanceof Error ? cause.message : String(cause)
          })
        )
      }
      return storeUnavailable()
    })

  /**
   * One command, bounded by the timeout; a failure for want of Redis becomes the unavailable store's error.
   * A lost connection marks the store unavailable at once. A late answer fails only its request: a busy
   * process is late too (its own queue counts in the wait), so only a run of them marks the store unavailable.
   */
  let lateInARow = 0
  const send = (script: typeof admitScript, subject: string, args: ReadonlyArray<string>) =>
    Effect.tryPromise({
      try: () => connection.runScript(script, subjectKey(subject), args),
      catch: (cause) => cause
    }).pipe(
      Effect.timeoutOrElse({
        duration: options.timeoutMillis,
        orElse: () => Effect.fail(new RedisTimeout(`no answer within ${options.timeoutMillis} ms`))
      }),
      Effect.tap(() => Effect.sync(() => (lateInARow = 0))),
      Effect.catch((cause) => {
        if (!isRedisUnavailable(cause)) return Effect.fail(new DatabaseError({ cause }))
        if (cause instanceof RedisTimeout && ++lateInARow < LATE_ANSWERS_FOR_AN_OUTAGE) {
          return Effect.fail(new DatabaseError({ cause: new QuotaStoreUnavailable(cause.message) }))
        }
        return Effect.flatMap(unavailable(cause), Effect.fail)
      })
    )

  const whileUnavailable = (request: AdmitRequest) =>
    options.failure === "open"
      ? fallback.admit(request)
      : Effect.fail(storeUnavailable())

  const probe = Effect.tryPromise(() => connection.ping()).pipe(
    Effect.timeout(options.timeoutMillis * 4),
    Effect.flatMap(() =>
      Effect.gen(function*() {
        available = true
        lateInARow = 0
        yield* recordQuotaStoreAvailability("redis", true)
        yield* Effect.logInfo("quota store available again").pipe(Effect.annotateLogs({ store: "redis" }))
      })
    ),
    Effect.ignore
  )
  yield* Effect.suspend(() => available ? Effect.void : probe).pipe(
    Effect.repeat(Schedule.spaced(PROBE_EVERY)),
    Effect.forkScoped
  )

  const admit = (request: AdmitRequest): Effect.Effect<Admission, DatabaseError> => {
    if (!available) return whileUnavailable(request)
    const args = [
      options.clock === "store" ? "" : String(request.now),
      String(request.perMinute),
      String(request.perDay),
      String(request.banThreshold),
      String(request.banMillis),
      request.consume ? "1" : "0",
      request.subject.startsWith(ADDRESS_SUBJECT_PREFIX) ? "0" : "1",
      String(EXPIRY_GRACE_MILLIS)
    ]
    const remote = Effect.map(
      send(admitScript, request.subject, args),
      (reply) => admissionOf(reply, options.clock === "store")
    )
    return options.failure === "open"
      ? Effect.catch(remote, (error) => error.unavailable ? fallback.admit(request) : Effect.fail(error))
      : remote
  }

  return QuotaStore.of({
    kind: "redis",
    admit: (request) =>
      Option.match(admissionProblem(request), {
        onNone: () => admit(request),
        onSome: (problem) => Effect.fail(new DatabaseError({ cause: new RangeError(problem) }))
      }),
    // Unbans are not lost to the fallback: one that finds Redis away fails (503) and is asked again.
    unban: (subject) =>
      Effect.asVoid(
        Effect.suspend(() =>
          available
            ? send(unbanScript, subject, [])
            : Effect.fail(
              storeUnavailable()
            )
        )
      ),
    expire: Effect.succeed(0)
  })
})

const layer = (options: RedisQuotaStoreOptions) =>
  Layer.effect(
    QuotaStore,
    Effect.flatMap(connectRedis(options), (connection) => makeRedisQuotaStore(connection, options))
  )

export const RedisQuotaStore = {
  layer,
  /** As configured: `REDIS_TYPE`, `REDIS_URL`, `QUOTA_STORE_FAILURE`, `QUOTA_STORE_TIMEOUT`; Redis's clock decides. */
  layerFromConfig: Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    // The configuration requires REDIS_URL with QUOTA_STORE=redis.
    const url = yield* Option.match(config.redisUrl, {
      onNone: () => Effect.fail(new StartupError({ message: "REDIS_URL: required by QUOTA_STORE=redis" })),
      onSome: (url) => Effect.succeed(Redacted.value(url))
    })
    return layer({
      type: config.redisType,
      url,
      clock: "store",
      timeoutMillis: config.quotaStoreTimeoutMillis,
      failure: config.quotaStoreFailure
    })
  }))
}
