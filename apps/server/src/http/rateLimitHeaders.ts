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
  const windows: Array<readonly [string, WindowState, number]> = [
    ["minute", decision.minute, 60],
    ...Option.toArray(Option.map(decision.day, (day) => ["day", day, 86_400] as const))
  ]
  return {
    "x-ratelimit-limit": String(binding.limit),
    "x-ratelimit-remaining": String(binding.remaining),
    "x-ratelimit-reset": String(seconds(binding.resetAt)),
    "ratelimit-policy": windows.map(([name, window, length]) => `"${name}";q=${window.limit};w=${length}`).join(", "),
    ratelimit: windows
      .map(([name, window]) => `"${name}";r=${window.remaining};t=${Math.max(0, seconds(window.resetAt - decision.now))}`)
      .join(", "),
    ...(refused ? { "retry-after": String(retryAfterSeconds(decision)) } : {})
  }
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
