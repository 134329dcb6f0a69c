import { planQuotas, RateLimitStatus } from "@petstore/contract"
import { Effect, Option, Schema } from "effect"
import { type Check, type Phase, skipped, skippedCheck } from "./checks.ts"
import { GENERAL_PHASE, keyHint, type RunContext } from "./context.ts"
import { decodeBody, ensure, expectError, failure, header, integerHeader, isSuccess } from "./expect.ts"
import { describeResponse, type Exchange, Http, retryAfterMillis, withKey } from "./http.ts"
import { type ApiKey, CheckFailed, type CheckSkipped, type Plan, type Tag } from "./model.ts"

/** Requests in flight at once while spending a quota: fast, and far enough from the limit to stop exactly at it. */
const BURST_CONCURRENCY = 10

/** A per-minute limit above this is not spent: it would take too long to prove anything useful. */
const LARGEST_BURST = 20_000

/** A daily limit above this is not spent either. */
const LARGEST_DAY = 1_000_000

/** A day's pacing takes a minute window per minute's quota; a key's day ends within a day whatever its limits. */
const dailyPacingSeconds = (quota: { readonly perMinute: number; readonly perDay: number } | undefined) =>
  quota === undefined ? 86_400 : Math.ceil(quota.perDay / quota.perMinute) * 61

interface Quota {
  readonly perMinute: number
  /** Unknown for an enterprise key when the service has no `GET /v1/rate_limit`. */
  readonly perDay: number | undefined
}

const decodeRateLimitStatus = Schema.decodeUnknownOption(RateLimitStatus)

/** `"minute";q=60;w=60, "day";q=1000;w=86400` as a map from window name to its parameters. */
export const parsePolicies = (value: string | undefined) => {
  const policies = new Map<string, Record<string, string>>()
  for (const item of (value ?? "").split(",")) {
    const [name, ...parameters] = item.split(";").map((part) => part.trim())
    if (name === undefined || name === "") continue
    policies.set(
      name.replace(/^"|"$/g, ""),
      Object.fromEntries(
        parameters.map((parameter) => parameter.split("=").map((part) => part.trim()) as [string, string])
      )
    )
  }
  return policies
}

const resetOf = (exchange: Exchange) => integerHeader(exchange, "x-ratelimit-reset")

/**
 * The most requests one burst sends: three windows' worth (the burst fails once the reported window has changed
 * three times) and a batch. A service that has refused none by then does not enforce the quota.
 */
export const maxBurstRequests = (perMinute: number) => 3 * perMinute + BURST_CONCURRENCY

interface Burst {
  /** The 429 that ended the burst. */
  readonly refusal: Exchange
  readonly admitted: number
}

/**
 * Spends the rest of the key's minute window, then sends one request more,
 * which must be refused. Windows are fixed and may be aligned to the wall
 * clock, so a burst can straddle a boundary: the requests are counted against
 * the window each answer reports (its `X-RateLimit-Reset`), and a new window
 * starts the count afresh. How much of the window was spent before the burst
 * is read from its first answer's `X-RateLimit-Remaining`.
 */
const spendTheMinute = (run: RunContext, key: ApiKey, perMinute: number) =>
  Effect.gen(function*() {
    const http = yield* Http
    const credential = withKey(key)
    const first = yield* http.send({ path: "/pets?limit=1", credential })
    if (!isSuccess(first)) return yield* failure(first, "status 200: the first request of the burst")
    const admittedIn = new Map<number, number>()
    const firstRemaining = integerHeader(first, "x-ratelimit-remaining")
    let window = resetOf(first)
    admittedIn.set(window, Number.isNaN(firstRemaining) ? 1 : Math.max(1, perMinute - firstRemaining))
    let windows = 1
    let sent = 1
    let reported = 0
    const windowDescription = () => Number.isNaN(window) ? "the window" : `the window that resets at ${window}`
    // Answers without a readable X-RateLimit-Reset all belong to one window: the one the burst started in.
    const sameWindow = (reset: number) => reset === window || (Number.isNaN(reset) && Number.isNaN(window))
    const mostRequests = maxBurstRequests(perMinute)

    while (true) {
      if (sent >= mostRequests) {
        return yield* new CheckFailed({
          request: `GET ${run.baseUrl}/pets?limit=1 (${key.label}), ${sent} times`,
          expected: `a 429 once ${perMinute} requests are admitted in a minute`,
          received: `${sent} requests sent, none refused with 429, ${
            Number.isNaN(window) ? "without an X-RateLimit-Reset to tell windows apart" : `over ${windows} windows`
          }: the quota is not enforced (the suite sends no more than ${mostRequests} in a burst)`
        })
      }
      if (windows > 3) {
        return yield* new CheckFailed({
          request: `GET ${run.baseUrl}/pets?limit=1 (${key.label}), ${sent} times`,
          expected: `${perMinute} requests admitted within one window`,
          received: `X-RateLimit-Reset changed ${windows - 1} times during the burst`
        })
      }
      const admitted = admittedIn.get(window) ?? 0
      const left = perMinute - admitted
      if (sent - reported >= 200) {
        reported = sent
        run.progress(
          `${key.plan}: spending the per-minute quota of ${perMinute} with ${key.label}: ${admitted} admitted`
        )
      }
      const batch = yield* Effect.forEach(
        Array.from({ length: Math.max(1, Math.min(left, BURST_CONCURRENCY)) }),
        () => http.send({ path: "/pets?limit=1", credential, retryWhenLimited: false }),
        { concurrency: "unbounded" }
      )
      sent += batch.length
      for (const exchange of batch) {
        const reset = resetOf(exchange)
        if (exchange.status !== 429 && reset > window) {
          // The window the answers report has moved on: count afresh in the new one.
          window = reset
          windows++
        }
        if (exchange.status === 429) {
          const before = admittedIn.get(window) ?? 0
          if (left > 0 && before < perMinute) {
            return yield* failure(
              exchange,
              `request ${before + 1} of ${windowDescription()} admitted (the quota is ${perMinute} a minute)`,
              `429 after ${before} admitted${
                Number.isNaN(firstRemaining)
                  ? ""
                  : ` (counting from X-RateLimit-Remaining: ${firstRemaining} before the burst)`
              }: ${describeResponse(exchange)}`
            )
          }
          return { refusal: exchange, admitted: before } satisfies Burst
        }
        if (!isSuccess(exchange)) {
          return yield* failure(
            exchange,
            left > 0 ? "status 200" : `status 429: request ${perMinute + 1} of the minute`
          )
        }
        const counted = (admittedIn.get(reset) ?? 0) + 1
        admittedIn.set(reset, counted)
        if (left === 0 && sameWindow(reset) && counted > perMinute) {
          return yield* failure(
            exchange,
            `status 429 for request ${counted} of ${windowDescription()}: the quota is ${perMinute} a minute`,
            `admitted as well, none of the ${counted} refused: ${describeResponse(exchange)}`
          )
        }
      }
    }
  })

interface DayOutcome {
  readonly refusal: Exchange
  readonly used: number
}

/**
 * Paces requests under the per-minute quota (never more at once than the
 * binding window has left; when it has none, waits for its reset) until the
 * daily quota is spent, then sends one more, which must be refused.
 */
const spendTheDay = (run: RunContext, key: ApiKey, quota: { perMinute: number; perDay: number }) =>
  Effect.gen(function*() {
    const http = yield* Http
    const credential = withKey(key)
    // The service says how much of the day is spent; failing that, assume the key is fresh today.
    const asked = yield* http.send({ path: "/rate_limit", credential })
    const status = asked.status === 200 ? decodeRateLimitStatus(asked.json) : Option.none()
    let used = Option.isSome(status) ? status.value.day.limit - status.value.day.remaining : yield* http.spent(key)
    const counting = Option.isSome(status)
      ? "as GET /v1/rate_limit reported"
      : "counting from this run: if the key was used earlier today (UTC), give a fresh one"
    let remaining = Number.NaN
    let reset = Number.NaN
    let lastProgress = 0
    let refusedInARow = 0
    while (used < quota.perDay) {
      if (remaining === 0) {
        const wait = reset * 1000 + 100 - Date.now()
        if (wait > 0 && wait <= run.maxWaitSeconds * 1000) {
          run.progress(
            `${key.plan} daily: ${used}/${quota.perDay} requests today with ${key.label}; next window in ${
              Math.ceil(wait / 1000)
            } s`
          )
          lastProgress = Date.now()
          yield* Effect.sleep(wait)
        }
      }
      const size = Math.max(
        1,
        Math.min(BURST_CONCURRENCY, quota.perDay - used, Number.isNaN(remaining) ? 1 : remaining)
      )
      const batch = yield* Effect.forEach(
        Array.from({ length: size }),
        () => http.send({ path: "/pets?limit=1", credential, retryWhenLimited: false }),
        { concurrency: "unbounded" }
      )
      remaining = Number.POSITIVE_INFINITY
      for (const exchange of batch) {
        if (exchange.status === 429) {
          const wait = retryAfterMillis(exchange.headers, exchange.receivedAt)
          // Refused by a minute window that reset later than announced: the key's gate waits it out, a few times.
          if (wait !== undefined && wait <= run.maxWaitSeconds * 1000 && ++refusedInARow <= 3) continue
          return yield* failure(
            exchange,
            `request ${used + 1} of the day admitted: the quota is ${quota.perDay} a day (${counting})`
          )
        }
        if (!isSuccess(exchange)) return yield* failure(exchange, "status 200")
        refusedInARow = 0
        used++
        const left = integerHeader(exchange, "x-ratelimit-remaining")
        if (!(left >= remaining)) {
          remaining = left
          reset = resetOf(exchange)
        }
      }
      if (remaining === Number.POSITIVE_INFINITY) remaining = Number.NaN
      if (Date.now() - lastProgress > 10_000) {
        lastProgress = Date.now()
        run.progress(`${key.plan} daily: ${used}/${quota.perDay} requests today with ${key.label}`)
      }
    }
    // The day's last admission often spends the minute too: wait that window out, so the refusal
    // that follows can only come from the day (and its headers describe the day).
    if (remaining === 0) {
      const wait = reset * 1000 + 100 - Date.now()
      if (wait > 0 && wait <= run.maxWaitSeconds * 1000) {
        run.progress(
          `${key.plan} daily: the day is spent; waiting ${Math.ceil(wait / 1000)} s for the minute window to reset`
        )
        yield* Effect.sleep(wait)
      }
    }
    const last = yield* http.send({ path: "/pets?limit=1", credential, retryWhenLimited: false })
    if (last.status !== 429) {
      return yield* failure(last, `status 429: the key has spent the ${quota.perDay} requests of its day (${counting})`)
    }
    return { refusal: last, used } satisfies DayOutcome
  })

const sameWindows = (a: RateLimitStatus, b: RateLimitStatus) =>
  a.minute.reset === b.minute.reset && a.day.reset === b.day.reset

/** Seconds until the window the answer describes resets, by its own X-RateLimit-Reset. */
const secondsToReset = (exchange: Exchange) => resetOf(exchange) - exchange.receivedAt / 1000

/** The plan's quotas enforced on one of its keys: the limit headers, the 429, the recovery and (with --daily) the day. */
export const planPhase = (run: RunContext, plan: Plan): Effect.Effect<Phase> =>
  Effect.gen(function*() {
    const keys = run.keys[plan]
    const fixed = plan === "enterprise" ? undefined : planQuotas[plan]
    const limitTitle = fixed === undefined
      ? "X-RateLimit-Limit is the key's own per-minute limit"
      : `X-RateLimit-Limit is ${fixed.perMinute}, the plan's per-minute quota`
    const burstTitle = fixed === undefined
      ? "as many requests as the key's per-minute limit are admitted in a minute, the next is refused with 429"
      : `${fixed.perMinute} requests in a minute are admitted, the next is refused with 429`
    const check = (
      id: string,
      tag: Tag,
      title: string,
      run: Check["run"],
      requires?: ReadonlyArray<string>,
      bounds: Pick<Check, "maxRequests" | "extraSeconds"> = {}
    ): Check => ({
      id: `${plan}.${id}`,
      area: plan,
      tag,
      title: `${plan}: ${title}`,
      run,
      ...(requires === undefined ? {} : { requires: requires.map((required) => `${plan}.${required}`) }),
      ...bounds
    })

    // Set aside keys exhaust their windows while the general checks run; a plan's only key waits for them.
    const burstKey = keys[1] ?? keys[0]
    const dailyKey = keys[2] ?? burstKey
    const send = (key: ApiKey, path: string, options: { costsNoQuota?: boolean } = {}) =>
      Http.use((http) => http.send({ path, credential: withKey(key), ...options }))

    const first = yield* Effect.cached(
      burstKey === undefined
        ? Effect.fail<CheckFailed | CheckSkipped>(skipped("no key"))
        : send(burstKey, "/pets?limit=1")
    )

    const rateLimitStatus = (key: ApiKey, options: { costsNoQuota?: boolean } = {}) =>
      Effect.gen(function*() {
        const exchange = yield* send(key, "/rate_limit", options)
        yield* ensure(exchange.status === 200, exchange, "status 200 with the key's plan and windows")
        return { exchange, status: yield* decodeBody(RateLimitStatus, exchange, "the plan, both windows and the ban") }
      })

    const quota = yield* Effect.cached(Effect.gen(function*() {
      if (fixed !== undefined) return { perMinute: fixed.perMinute, perDay: fixed.perDay } satisfies Quota
      // Enterprise limits are the key's own: ask the service, or read the limit it enforces from the headers.
      const asked = yield* Effect.option(rateLimitStatus(burstKey!))
      if (Option.isSome(asked)) {
        return { perMinute: asked.value.status.minute.limit, perDay: asked.value.status.day.limit } satisfies Quota
      }
      const exchange = yield* first
      const limit = integerHeader(exchange, "x-ratelimit-limit")
      yield* ensure(limit > 0, exchange, "X-RateLimit-Limit: the key's per-minute limit")
      return { perMinute: limit, perDay: undefined } satisfies Quota
    }))

    let burst: Burst | undefined
    let day: DayOutcome | undefined

    const checks: Array<Check> = [
      check(
        "limit",
        "spec",
        limitTitle,
        Effect.gen(function*() {
          const exchange = yield* first
          const { perMinute, perDay } = yield* quota
          const limit = integerHeader(exchange, "x-ratelimit-limit")
          if (limit === perDay && integerHeader(exchange, "x-ratelimit-remaining") < perMinute) {
            return yield* skipped(
              `${burstKey!.label} has fewer requests left today than a minute's worth: give a fresh key`
            )
          }
          yield* ensure(limit === perMinute, exchange, `X-RateLimit-Limit: ${perMinute}`)
        })
      ),
      check(
        "policy",
        "extension",
        "RateLimit-Policy and RateLimit describe the minute and the day",
        Effect.gen(function*() {
          const exchange = yield* first
          const { perMinute, perDay } = yield* quota
          if (perDay === undefined) {
            return yield* skipped("the key's daily limit is unknown: the service has no GET /v1/rate_limit")
          }
          const policies = parsePolicies(header(exchange, "ratelimit-policy"))
          const minute = policies.get("minute")
          const dayPolicy = policies.get("day")
          yield* ensure(
            minute?.q === String(perMinute) && minute.w === "60" && dayPolicy?.q === String(perDay) &&
              dayPolicy.w === "86400",
            exchange,
            `RateLimit-Policy: "minute";q=${perMinute};w=60, "day";q=${perDay};w=86400`,
            `RateLimit-Policy: ${header(exchange, "ratelimit-policy") ?? "(none)"}`
          )
          const windows = parsePolicies(header(exchange, "ratelimit"))
          yield* ensure(
            /^\d+$/.test(windows.get("minute")?.r ?? "") && /^\d+$/.test(windows.get("day")?.r ?? ""),
            exchange,
            "RateLimit with r (requests left) and t (seconds to reset) for \"minute\" and \"day\"",
            `RateLimit: ${header(exchange, "ratelimit") ?? "(none)"}`
          )
        })
      ),
      check(
        "rate-limit-endpoint",
        "extension",
        "GET /v1/rate_limit shows the plan and both windows, at no cost",
        Effect.gen(function*() {
          yield* first
          const { perMinute, perDay } = yield* quota
          // Two calls in one window each: across a reset the counts differ without any cost (a run started at :59).
          let before = yield* rateLimitStatus(burstKey!)
          let after = yield* rateLimitStatus(burstKey!)
          for (let attempt = 1; attempt < 3 && !sameWindows(before.status, after.status); attempt++) {
            before = after
            after = yield* rateLimitStatus(burstKey!)
          }
          const status = before.status
          yield* ensure(
            status.plan === plan && status.minute.limit === perMinute &&
              (perDay === undefined || status.day.limit === perDay) &&
              status.ban === null,
            before.exchange,
            `plan ${plan}, minute.limit ${perMinute}${perDay === undefined ? "" : `, day.limit ${perDay}`}, ban null`
          )
          yield* ensure(
            after.status.minute.remaining === status.minute.remaining &&
              after.status.day.remaining === status.day.remaining,
            after.exchange,
            `the same remaining counts as the call before (minute ${status.minute.remaining}, day ${status.day.remaining}): it costs no quota`
          )
        })
      ),
      check(
        "burst",
        "spec",
        burstTitle,
        Effect.gen(function*() {
          const { perMinute } = yield* quota
          if (perMinute > LARGEST_BURST) {
            return yield* skipped(`a per-minute limit of ${perMinute} is more than this suite spends`)
          }
          burst = yield* spendTheMinute(run, burstKey!, perMinute)
        }),
        undefined,
        // The burst, and the requests that learn an enterprise key's limits.
        { maxRequests: maxBurstRequests(fixed?.perMinute ?? LARGEST_BURST) + 10 }
      ),
      // "The body of a 429 response is not shown" (spec §7): refusal-details holds it to the README's Error.
      check(
        "refusal",
        "spec",
        "the 429 carries Retry-After and X-RateLimit-Remaining: 0",
        Effect.gen(function*() {
          const refusal = burst!.refusal
          yield* ensure(refusal.status === 429, refusal, "status 429")
          yield* ensure(
            retryAfterMillis(refusal.headers, refusal.receivedAt) !== undefined,
            refusal,
            "Retry-After in seconds or as an HTTP date"
          )
          yield* ensure(integerHeader(refusal, "x-ratelimit-remaining") === 0, refusal, "X-RateLimit-Remaining: 0")
        }),
        ["burst"]
      ),
      check(
        "refusal-details",
        "extension",
        "the 429 has an Error body saying rate_limited, with Retry-After in whole seconds until X-RateLimit-Reset",
        Effect.gen(function*() {
          const refusal = burst!.refusal
          const retryAfter = header(refusal, "retry-after") ?? ""
          yield* expectError(refusal, 429)
          yield* ensure((refusal.json as { code?: unknown })?.code === "rate_limited", refusal, "code rate_limited")
          yield* ensure(
            /^\d+$/.test(retryAfter) && Number(retryAfter) >= 1 &&
              Math.abs(Number(retryAfter) - secondsToReset(refusal)) <= 2,
            refusal,
            `Retry-After in whole seconds, at least 1, until X-RateLimit-Reset (about ${
              Math.round(secondsToReset(refusal))
            } s)`
          )
        }),
        ["burst"]
      ),
      check(
        "limited-status",
        "extension",
        "GET /v1/rate_limit answers while the key is limited",
        Effect.gen(function*() {
          const { exchange, status } = yield* rateLimitStatus(burstKey!, { costsNoQuota: true })
          if (status.minute.remaining > 0 && status.minute.reset > resetOf(burst!.refusal)) {
            return yield* skipped(
              "the minute window reset between the 429 and this call: the key was no longer limited"
            )
          }
          yield* ensure(
            status.minute.remaining === 0 && status.ban === null,
            exchange,
            "minute.remaining 0 and ban null"
          )
        }),
        ["burst"]
      ),
      check(
        "recovery",
        "spec",
        "after waiting Retry-After, requests are admitted again",
        Effect.gen(function*() {
          const exchange = yield* Http.use((http) =>
            http.send({ path: "/pets?limit=1", credential: withKey(burstKey!), retryWhenLimited: false })
          )
          yield* ensure(
            isSuccess(exchange),
            exchange,
            `status 200 once Retry-After (${header(burst!.refusal, "retry-after") ?? "?"} s) has passed`
          )
        }),
        ["burst"]
      ),
      check(
        "not-banned",
        "extension",
        "a client that honours Retry-After is never banned",
        Effect.gen(function*() {
          const { exchange, status } = yield* rateLimitStatus(burstKey!)
          yield* ensure(status.ban === null, exchange, "ban null")
        }),
        ["recovery"]
      ),
      check(
        "daily",
        "spec",
        `paced under the minute quota, the daily quota is admitted, then 429`,
        Effect.gen(function*() {
          const { perMinute, perDay } = yield* quota
          if (perDay === undefined) {
            return yield* skipped("the key's daily limit is unknown: the service has no GET /v1/rate_limit")
          }
          if (!run.daily) {
            return yield* skipped(
              `runs with --daily: it paces requests until the daily quota of ${perDay} binds (about ${
                Math.ceil(perDay / perMinute)
              } minutes)`
            )
          }
          if (perDay > LARGEST_DAY) {
            return yield* skipped(`a daily limit of ${perDay} is more than this suite spends`)
          }
          day = yield* spendTheDay(run, dailyKey!, { perMinute, perDay })
        }),
        undefined,
        // The day, the minute windows that refuse a request or two as they turn, and the final refusal.
        { maxRequests: (fixed?.perDay ?? LARGEST_DAY) + 100, extraSeconds: dailyPacingSeconds(fixed) }
      ),
      check(
        "daily-details",
        "extension",
        "once the day is spent, X-RateLimit-* describe the day and Retry-After runs to its reset",
        Effect.gen(function*() {
          const { perDay } = yield* quota
          const refusal = day!.refusal
          const retryAfter = header(refusal, "retry-after") ?? ""
          yield* ensure(
            integerHeader(refusal, "x-ratelimit-limit") === perDay &&
              integerHeader(refusal, "x-ratelimit-remaining") === 0 &&
              (refusal.json as { code?: unknown })?.code === "rate_limited" &&
              /^\d+$/.test(retryAfter) && Math.abs(Number(retryAfter) - secondsToReset(refusal)) <= 2,
            refusal,
            `code rate_limited, X-RateLimit-Limit: ${perDay}, X-RateLimit-Remaining: 0 and Retry-After until X-RateLimit-Reset`
          )
        }),
        ["daily"]
      )
    ]

    if (burstKey === undefined) {
      return {
        name: plan,
        checks: checks.map((each) => skippedCheck(each, `no ${plan} key given: ${keyHint(plan)}`))
      }
    }
    const sharesTheGeneralKey = burstKey === run.generalKey || dailyKey === run.generalKey
    return { name: plan, ...(sharesTheGeneralKey ? { after: [GENERAL_PHASE] } : {}), checks }
  })
