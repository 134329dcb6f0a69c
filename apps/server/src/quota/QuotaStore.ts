import { Context, Effect, Exit, Layer, Option, Request, RequestResolver } from "effect"
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
  if (![request.now, request.banMillis].every(Number.isSafeInteger)) return Option.some("Quota times are whole milliseconds")
  return Option.none()
}

export const MINUTE_MILLIS = 60_000
export const DAY_MILLIS = 86_400_000

/**
 * Where quota counts live. Both stores implement the same rules; each
 * admission is atomic: a refused request spends nothing. Windows only move
 * forward, so callers whose clocks disagree by a few seconds (hosts of a fleet)
 * never restart a window's counts: none admits more than its limit.
 */
export class QuotaStore extends Context.Service<QuotaStore, {
  readonly kind: "memory" | "postgres"
  readonly admit: (request: AdmitRequest) => Effect.Effect<Admission, DatabaseError>
  readonly unban: (subject: string) => Effect.Effect<void, DatabaseError>
}>()("@petstore/server/quota/QuotaStore") {
  /** One process's counts, in its memory: the default with the embedded database. */
  static readonly memory = Layer.sync(QuotaStore, () => {
    interface Usage {
      minuteStart: number
      minuteCount: number
      minuteRefused: number
      dayStart: number
      dayCount: number
      bannedUntil: number | null
    }
    const usage = new Map<string, Usage>()

    // Subjects idle since an earlier day hold nothing worth keeping.
    const forgetIdle = (today: number) => {
      for (const [subject, entry] of usage) {
        if (entry.dayStart < today && (entry.bannedUntil === null || entry.bannedUntil < today)) usage.delete(subject)
      }
    }

    const admit = (request: AdmitRequest): Admission => {
      const minute = request.now - (request.now % MINUTE_MILLIS)
      const day = request.now - (request.now % DAY_MILLIS)
      let entry = usage.get(request.subject)
      if (entry === undefined) {
        if (usage.size >= 100_000) forgetIdle(day)
        entry = { minuteStart: minute, minuteCount: 0, minuteRefused: 0, dayStart: day, dayCount: 0, bannedUntil: null }
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
          const column = (pick: (request: AdmitRequest) => string | number | boolean) => arrayLiteral(requests.map(pick))
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

      return QuotaStore.of({
        kind: "postgres",
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
