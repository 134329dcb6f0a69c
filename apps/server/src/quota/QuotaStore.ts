import { Clock, Context, Effect, Exit, Layer, Option, Request, RequestResolver, Schedule, Semaphore } from "effect"
import { answerTogetherOrEach } from "../db/batch.ts"
import { Database } from "../db/Database.ts"
import { DatabaseError } from "../db/DatabaseError.ts"
import { arrayLiteral, sql } from "../db/sql.ts"

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

/**
 * A subject is forgotten this long after its expiry, not at once: a host of a
 * fleet whose clock lags by seconds must still find the counts of the window
 * it believes current (windows only move forward).
 */
export const EXPIRY_GRACE_MILLIS = 60_000
/** Expired subjects the in-memory store forgets per admission: more than one admission can file. */
const DRAIN_PER_ADMISSION = 64
/** Rows the PostgreSQL store deletes per statement, and how often it sweeps. */
const SWEEP_BATCH = 1_000
const SWEEP_EVERY = "5 minutes"

const minuteOf = (millis: number) => millis - (millis % MINUTE_MILLIS)

/**
 * Where quota counts live. Both stores implement the same rules; each
 * admission is atomic: a refused request spends nothing. Windows only move
 * forward, so callers whose clocks disagree by a few seconds (hosts of a fleet)
 * never restart a window's counts: none admits more than its limit.
 */
export class QuotaStore extends Context.Service<QuotaStore, {
  readonly kind: "memory" | "postgres" | "redis"
  readonly admit: (request: AdmitRequest) => Effect.Effect<Admission, DatabaseError>
  readonly unban: (subject: string) => Effect.Effect<void, DatabaseError>
  /**
   * Forgets every subject no window needs any more, as of the clock's now;
   * returns how many. Both stores also do this by themselves as they run.
   */
  readonly expire: Effect.Effect<number, DatabaseError>
}>()("@petstore/server/quota/QuotaStore") {
  /**
   * One process's counts, in its memory: the default with the embedded
   * database. Entries expire as the database's rows do (`expiresAt`). Each is
   * filed under the minute it may be dropped in; a minute's file is drained a
   * few entries per admission once that minute has passed, so forgetting costs
   * the same small amount per admission however many subjects there are.
   */
  static readonly memory = Layer.sync(QuotaStore, () => {
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
    /** Subjects by the minute from which they may be forgotten (an entry is re-filed when its expiry moves). */
    const files = new Map<number, Array<string>>()
    /** Files whose minute has passed, drained a few subjects at a time. */
    const due: Array<Array<string>> = []
    let dueIndex = 0
    let sweptMinute: number | undefined

    const forgettableFrom = (expiresAt: number) => minuteOf(expiresAt + EXPIRY_GRACE_MILLIS) + MINUTE_MILLIS
    const refile = (subject: string, entry: Usage) => {
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

    return QuotaStore.of({
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
    })
  })

  /**
   * Counts shared by every server process on the database. The admissions of
   * concurrent requests are collected and sent as one statement
   * (`quota_admit_many`), which applies each exactly as if it came alone.
   */
  static readonly postgres = Layer.effect(
    QuotaStore,
    Effect.gen(function*() {
      const db = yield* Database
      interface Row {
        readonly ordinal: number
        readonly admitted: boolean
        readonly minute_start: number
        readonly minute_count: number
        readonly day_start: number
        readonly day_count: number
        readonly banned_until: number | null
      }
      interface Admit extends Request.Request<Admission, DatabaseError> {
        readonly request: AdmitRequest
      }
      const Admit = Request.of<Admit>()

      const admitTogether = RequestResolver.make<Admit>((entries) =>
        answerTogetherOrEach(entries, (entries) => {
          const requests = entries.map((entry) => entry.request.request)
          // Every admission of a batch shares the ban length: it is the server's setting.
          const column = (pick: (request: AdmitRequest) => string | number | boolean) =>
            arrayLiteral(requests.map(pick))
          return db.query<Row>(sql`SELECT * FROM quota_admit_many(
              ${column((r) => r.subject)}::text[], ${column((r) => r.now)}::bigint[],
              ${column((r) => r.perMinute)}::integer[], ${column((r) => r.perDay)}::integer[],
              ${column((r) => r.banThreshold)}::integer[], ${requests[0]!.banMillis}::bigint,
              ${column((r) => r.consume)}::boolean[])`).pipe(
            Effect.map((rows) => {
              for (const row of rows) {
                entries[row.ordinal - 1]!.completeUnsafe(Exit.succeed({
                  admitted: row.admitted,
                  minuteStart: row.minute_start,
                  minuteCount: row.minute_count,
                  dayStart: row.day_start,
                  dayCount: row.day_count,
                  bannedUntil: row.banned_until
                }))
              }
            })
          )
        })
      ).pipe(RequestResolver.batchN(500))

      /**
       * Deletes expired rows, a bounded batch per statement through the
       * `expires_at` index, until a batch comes back short. Rows another
       * process is admitting or deleting are skipped, not waited for; this
       * process sweeps once at a time, so a sweep that returns has seen every
       * row it could delete.
       */
      const oneSweepAtATime = yield* Semaphore.make(1)
      const expire = oneSweepAtATime.withPermits(1)(Effect.gen(function*() {
        const cutoff = (yield* Clock.currentTimeMillis) - EXPIRY_GRACE_MILLIS
        let total = 0
        for (;;) {
          const deleted = yield* db.query(sql`
            DELETE FROM quota_usage AS q USING (
              SELECT subject FROM quota_usage WHERE expires_at < ${cutoff}::bigint
              ORDER BY expires_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED
            ) AS expired
            WHERE q.subject = expired.subject
            RETURNING 1`)
          total += deleted.length
          if (deleted.length < SWEEP_BATCH) return total
        }
      }))

      // A sweep that fails (the database is away) is tried again at the next one.
      yield* expire.pipe(Effect.ignore, Effect.repeat(Schedule.spaced(SWEEP_EVERY)), Effect.forkScoped)

      return QuotaStore.of({
        kind: "postgres",
        expire,
        admit: (request) =>
          Option.match(admissionProblem(request), {
            onNone: () => Effect.request(Admit({ request }), admitTogether),
            onSome: (problem) => Effect.fail(new DatabaseError({ cause: new RangeError(problem) }))
          }),
        unban: (subject) =>
          Effect.asVoid(
            db.query(sql`UPDATE quota_usage SET banned_until = NULL, minute_refused = 0 WHERE subject = ${subject}`)
          )
      })
    })
  )
}
