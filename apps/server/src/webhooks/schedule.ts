/**
 * When a delivery is tried (Standard Webhooks' example schedule): at once,
 * then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after each
 * failure; ten attempts in about three and a half days.
 */
export const RETRY_DELAYS_MILLIS: ReadonlyArray<number> = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  14 * 3_600_000,
  20 * 3_600_000,
  24 * 3_600_000
]

export const MAX_ATTEMPTS = RETRY_DELAYS_MILLIS.length + 1

/** Each delay is moved by up to ±10 %, so that receivers coming back are not met by every retry at once. */
export const JITTER = 0.1

/** A `Retry-After` longer than this is not waited for; the next attempt comes after this at most. */
export const MAX_RETRY_AFTER_MILLIS = 24 * 3_600_000

/** An endpoint whose deliveries have failed for this long, without a success between, is disabled. */
export const DISABLE_AFTER_MILLIS = 5 * 24 * 3_600_000

/**
 * The wait before the attempt after attempt `attempt` (1-based) failed, or none
 * when it was the last. `retryAfterMillis`, from a 429 or 502–504, is honoured
 * when longer than the schedule's delay. `random` is in [0, 1).
 */
export const nextDelayMillis = (attempt: number, random: number, retryAfterMillis?: number): number | undefined => {
  const delay = RETRY_DELAYS_MILLIS[attempt - 1]
  if (delay === undefined) return undefined
  const jittered = Math.round(delay * (1 - JITTER + 2 * JITTER * random))
  return Math.max(jittered, Math.min(retryAfterMillis ?? 0, MAX_RETRY_AFTER_MILLIS))
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; none when absent or unreadable. */
export const retryAfterMillis = (value: string | undefined, nowMillis: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^[0-9]{1,10}$/.test(trimmed)) return Number(trimmed) * 1000
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMillis)
}
