import { ADDRESS_SUBJECT_PREFIX, DAY_MILLIS, EXPIRY_GRACE_MILLIS, MINUTE_MILLIS } from "./storeInterface.ts"

/**
 * When no window of a subject counts any more: a key's day, an address's
 * minute, or its ban if that lasts longer. Migration 0011 computes the same
 * `expires_at` in PostgreSQL.
 */
const expiryOf = (
  subject: string,
  usage: { readonly minuteStart: number; readonly dayStart: number; readonly bannedUntil: number | null }
) =>
  Math.max(
    subject.startsWith(ADDRESS_SUBJECT_PREFIX) ? usage.minuteStart + MINUTE_MILLIS : usage.dayStart + DAY_MILLIS,
    usage.bannedUntil ?? 0
  )

const minuteOf = (millis: number) => millis - (millis % MINUTE_MILLIS)

/** Expired subjects the in-memory store forgets per admission: more than one admission can file. */
export const DRAIN_PER_ADMISSION = 64

/** What the wheel reads of an entry, and the expiry it keeps on it. */
export interface Expiring {
  readonly minuteStart: number
  readonly dayStart: number
  readonly bannedUntil: number | null
  expiresAt: number
}

/**
 * Forgets the in-memory store's entries as the database's rows expire (`expiresAt`, migration 0011). Each is
 * filed under the minute it may be dropped in; a minute's file is drained a few entries per admission once that
 * minute has passed, so forgetting costs the same small amount per admission however many subjects there are.
 */
export const expiryWheel = <E extends Expiring>(usage: Map<string, E>) => {
  /** Subjects by the minute from which they may be forgotten (an entry is re-filed when its expiry moves). */
  const files = new Map<number, Array<string>>()
  /** Files whose minute has passed, drained a few subjects at a time. */
  const due: Array<Array<string>> = []
  let dueIndex = 0
  let sweptMinute: number | undefined

  const forgettableFrom = (expiresAt: number) => minuteOf(expiresAt + EXPIRY_GRACE_MILLIS) + MINUTE_MILLIS
  const refile = (subject: string, entry: E) => {
    const expiresAt = expiryOf(subject, entry)
    if (expiresAt === entry.expiresAt) return
    entry.expiresAt = expiresAt
    const minute = forgettableFrom(expiresAt)
    const file = files.get(minute)
    if (file === undefined) files.set(minute, [subject])
    else file.push(subject)
  }

  /** Moves the files of every minute up to now to the drain; walks the files instead when the clock jumped far. */
  const collectDue = (now: number) => {
    const current = minuteOf(now)
    if (sweptMinute === undefined) sweptMinute = current
    if (current <= sweptMinute) return
    if ((current - sweptMinute) / MINUTE_MILLIS > files.size) {
      for (const [minute, file] of files) {
        if (minute <= current) {
          files.delete(minute)
          due.push(file)
        }
      }
    } else {
      for (let minute = sweptMinute + MINUTE_MILLIS; minute <= current; minute += MINUTE_MILLIS) {
        const file = files.get(minute)
        if (file !== undefined) {
          files.delete(minute)
          due.push(file)
        }
      }
    }
    sweptMinute = current
  }

  /** Forgets up to `budget` filed subjects whose entries have expired; returns how many it forgot. */
  const drain = (now: number, budget: number) => {
    let forgotten = 0
    while (budget > 0 && due.length > 0) {
      const file = due[0]!
      const subject = file[dueIndex++]
      if (subject === undefined) {
        due.shift()
        dueIndex = 0
        continue
      }
      budget--
      const entry = usage.get(subject)
      if (entry !== undefined && forgettableFrom(entry.expiresAt) <= now) {
        usage.delete(subject)
        forgotten++
      }
    }
    return forgotten
  }

  return { refile, collectDue, drain }
}
