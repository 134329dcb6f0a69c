import type { QuotaWindow } from "@petstore/contract"
import { Option } from "effect"
import type { QuotaDecision, WindowState } from "../quota/Quota.ts"

/** Whole seconds, rounded up: Unix times of resets and ban ends, and waits, as the wire shows them. */
const seconds = (millis: number) => Math.ceil(millis / 1000)

/** The window a client runs into first: the one with fewer requests left; on a tie, the minute. */
export const bindingWindow = (decision: QuotaDecision): WindowState =>
  Option.match(decision.day, {
    onNone: () => decision.minute,
    onSome: (day) => day.remaining < decision.minute.remaining ? day : decision.minute
  })

/**
 * Seconds until a request can be admitted again (at least 1): the rest of a
 * ban, or until every exhausted window has reset.
 */
export const retryAfterSeconds = (decision: QuotaDecision): number => {
  const until = Option.getOrElse(decision.bannedUntil, () =>
    Math.max(
      ...[decision.minute, ...Option.toArray(decision.day)]
        .filter((window) => window.remaining === 0)
        .map((window) => window.resetAt),
      decision.now
    ))
  return Math.max(1, seconds(until - decision.now))
}

/**
 * The one place rate-limit headers are written: `X-RateLimit-*` for the binding
 * window, and the IETF httpapi draft's `RateLimit-Policy` and `RateLimit` for
 * every window, so a client sees its daily quota without exhausting it; and
 * `Retry-After` when the request was refused.
 */
export const rateLimitHeaders = (decision: QuotaDecision, refused: boolean): Record<string, string> => {
  const binding = bindingWindow(decision)
  const { minute } = decision
  // Written out rather than mapped over the windows: this runs on every request under /v1.
  let policy = `"minute";q=${minute.limit};w=60`
  let remaining = `"minute";r=${minute.remaining};t=${Math.max(0, seconds(minute.resetAt - decision.now))}`
  if (Option.isSome(decision.day)) {
    const day = decision.day.value
    policy += `, "day";q=${day.limit};w=86400`
    remaining += `, "day";r=${day.remaining};t=${Math.max(0, seconds(day.resetAt - decision.now))}`
  }
  const headers: Record<string, string> = {
    "x-ratelimit-limit": String(binding.limit),
    "x-ratelimit-remaining": String(binding.remaining),
    "x-ratelimit-reset": String(seconds(binding.resetAt)),
    "ratelimit-policy": policy,
    ratelimit: remaining
  }
  if (refused) headers["retry-after"] = String(retryAfterSeconds(decision))
  return headers
}

const toWindow = (window: WindowState): QuotaWindow => ({
  limit: window.limit,
  remaining: window.remaining,
  reset: seconds(window.resetAt)
})

/** A key's quota as the wire shows it, in `GET /v1/rate_limit` and in the admin API's usage report. */
export const quotaReport = (decision: QuotaDecision) => ({
  minute: toWindow(decision.minute),
  day: toWindow(Option.getOrElse(decision.day, () => decision.minute)),
  ban: Option.match(decision.bannedUntil, { onNone: () => null, onSome: (until) => ({ until: seconds(until) }) })
})
