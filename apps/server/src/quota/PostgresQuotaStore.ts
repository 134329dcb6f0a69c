import { Clock, Effect, Exit, Option, Request, RequestResolver, Schedule, Semaphore } from "effect"
import { answerTogetherOrEach } from "../db/batch.ts"
import { Database } from "../db/Database.ts"
import { DatabaseError } from "../db/DatabaseError.ts"
import { arrayLiteral, sql } from "../db/sql.ts"
import {
  type Admission,
  admissionProblem,
  type AdmitRequest,
  EXPIRY_GRACE_MILLIS,
  type QuotaStoreShape
} from "./storeInterface.ts"

/** Rows the PostgreSQL store deletes per statement, and how often it sweeps. */
const SWEEP_BATCH = 1_000
const SWEEP_EVERY = "5 minutes"

/**
 * Counts shared by every server process on the database. The admissions of
 * concurrent requests are collected and sent as one statement
 * (`quota_admit_many`), which applies each exactly as if it came alone.
 */
export const makePostgresQuotaStore = Effect.gen(function*() {
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

  const store: QuotaStoreShape = {
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
  }
  return store
})
