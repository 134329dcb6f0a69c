import { Clock, Effect } from "effect"
import { DRAIN_PER_ADMISSION, expiryWheel } from "./expiryWheel.ts"
import { type Admission, type AdmitRequest, DAY_MILLIS, MINUTE_MILLIS, type QuotaStoreShape } from "./storeInterface.ts"

/**
 * One process's counts, in its memory: the default with the embedded
 * database. Entries expire as the database's rows do (`expiresAt`), forgotten
 * a few per admission by the expiry wheel (`expiryWheel.ts`).
 */
export const makeMemoryQuotaStore = (): QuotaStoreShape => {
  interface Usage {
    minuteStart: number
    minuteCount: number
    minuteRefused: number
    dayStart: number
    dayCount: number
    bannedUntil: number | null
    expiresAt: number
  }
  const usage = new Map<string, Usage>()
  const { collectDue, drain, refile } = expiryWheel(usage)

  const admit = (request: AdmitRequest): Admission => {
    const minute = request.now - (request.now % MINUTE_MILLIS)
    const day = request.now - (request.now % DAY_MILLIS)
    collectDue(request.now)
    drain(request.now, DRAIN_PER_ADMISSION)
    let entry = usage.get(request.subject)
    if (entry === undefined) {
      entry = {
        minuteStart: minute,
        minuteCount: 0,
        minuteRefused: 0,
        dayStart: day,
        dayCount: 0,
        bannedUntil: null,
        expiresAt: Number.NaN
      }
      usage.set(request.subject, entry)
    }
    // Windows only move forward, as in PostgreSQL's quota_admit: a time before the window counts in it.
    if (minute > entry.minuteStart) Object.assign(entry, { minuteStart: minute, minuteCount: 0, minuteRefused: 0 })
    if (day > entry.dayStart) Object.assign(entry, { dayStart: day, dayCount: 0 })
    if (entry.bannedUntil !== null && entry.bannedUntil <= request.now) entry.bannedUntil = null
    const admitted = entry.bannedUntil === null && entry.minuteCount < request.perMinute &&
      entry.dayCount < request.perDay
    if (request.consume) {
      if (admitted) {
        entry.minuteCount++
        entry.dayCount++
      } else if (entry.bannedUntil === null && ++entry.minuteRefused > request.banThreshold) {
        entry.bannedUntil = request.now + request.banMillis
      }
    }
    refile(request.subject, entry)
    return {
      admitted,
      minuteStart: entry.minuteStart,
      minuteCount: entry.minuteCount,
      dayStart: entry.dayStart,
      dayCount: entry.dayCount,
      bannedUntil: entry.bannedUntil
    }
  }

  return {
    kind: "memory",
    admit: (request) => Effect.sync(() => admit(request)),
    expire: Effect.map(Clock.currentTimeMillis, (now) => {
      collectDue(now)
      return drain(now, Number.POSITIVE_INFINITY)
    }),
    unban: (subject) =>
      Effect.sync(() => {
        const entry = usage.get(subject)
        if (entry !== undefined) Object.assign(entry, { bannedUntil: null, minuteRefused: 0 })
      })
  }
}
