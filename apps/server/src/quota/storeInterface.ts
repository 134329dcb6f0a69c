import { type Effect, Option } from "effect"
import type { DatabaseError } from "../db/DatabaseError.ts"

/** What every quota store (`QuotaStore.ts`) is asked and answers, and the windows' lengths they share. */

/** One admission, or a look that spends nothing (`consume: false`). Times are Unix milliseconds. */
export interface AdmitRequest {
  readonly subject: string
  readonly now: number
  readonly perMinute: number
  readonly perDay: number
  readonly banThreshold: number
  readonly banMillis: number
  readonly consume: boolean
}

/** The subject's windows after the request. */
export interface Admission {
  readonly admitted: boolean
  readonly minuteStart: number
  readonly minuteCount: number
  readonly dayStart: number
  readonly dayCount: number
  readonly bannedUntil: number | null
  /** When the store decided by its own clock (Redis `TIME`), that time: the caller's `now` was not used. */
  readonly decidedAt?: number
}

/**
 * Subjects are `key:<id>` or `address:<address or /64>`: far shorter. A
 * longer one is a bug upstream; it is refused before it joins a batch, where
 * it could break an index's row size limit for every request beside it.
 */
export const MAX_SUBJECT_LENGTH = 200
const INTEGER_MAX = 2_147_483_647

/** Why a request cannot be stored, if it cannot: checked before it is batched with others. */
export const admissionProblem = (request: AdmitRequest): Option.Option<string> => {
  if (request.subject.length === 0 || request.subject.length > MAX_SUBJECT_LENGTH || request.subject.includes("\0")) {
    return Option.some(`A quota subject is 1 to ${MAX_SUBJECT_LENGTH} characters without NUL`)
  }
  const integers = [request.perMinute, request.perDay, request.banThreshold]
  if (!integers.every((value) => Number.isInteger(value) && value >= 0 && value <= INTEGER_MAX)) {
    return Option.some("Quota limits are integers from 0 to 2147483647")
  }
  if (![request.now, request.banMillis].every(Number.isSafeInteger)) {
    return Option.some("Quota times are whole milliseconds")
  }
  return Option.none()
}

export const MINUTE_MILLIS = 60_000
export const DAY_MILLIS = 86_400_000

/** Client addresses are counted under this prefix; they have no daily window. */
export const ADDRESS_SUBJECT_PREFIX = "address:"

/**
 * A subject is forgotten this long after its expiry, not at once: a host of a
 * fleet whose clock lags by seconds must still find the counts of the window
 * it believes current (windows only move forward).
 */
export const EXPIRY_GRACE_MILLIS = 60_000

/**
 * What a quota store does: `QuotaStore` is the service; `MemoryQuotaStore.ts`, `PostgresQuotaStore.ts` and
 * `redis/RedisQuotaStore.ts` are the stores.
 */
export interface QuotaStoreShape {
  readonly kind: "memory" | "postgres" | "redis"
  readonly admit: (request: AdmitRequest) => Effect.Effect<Admission, DatabaseError>
  readonly unban: (subject: string) => Effect.Effect<void, DatabaseError>
  /**
   * Forgets every subject no window needs any more, as of the clock's now;
   * returns how many. Both stores also do this by themselves as they run.
   */
  readonly expire: Effect.Effect<number, DatabaseError>
}
