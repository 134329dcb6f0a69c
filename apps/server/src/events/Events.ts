import type { Event, EventType } from "@petstore/contract"
import { Context, Effect, Layer, Schedule } from "effect"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"

/** Events are kept this long (README "Events and webhooks"): a receiver that was down can catch up within it. */
export const EVENT_RETENTION = "30 days"

/** A position in the event log: the writing transaction's id and the order of writing within it. */
export interface EventPosition {
  readonly tx: string
  readonly seq: number
}

export const START: EventPosition = { tx: "0", seq: 0 }

/** Whose events a caller sees: pet events and its own; a staff key also every key's order events. */
export interface EventScope {
  readonly apiKeyId: string
  readonly staff: boolean
}

export interface EventPageQuery {
  readonly limit: number
  readonly type: EventType | undefined
  readonly after: EventPosition
}

export interface EventPage {
  readonly events: ReadonlyArray<Event>
  /**
   * Where reading on starts: after this page's last event, or, on an empty page (the end of the log for
   * now), where this page started. A reader follows it whether or not more events follow yet.
   */
  readonly nextAfter: EventPosition
}

/** A row of the events table as its statements return it. */
export interface EventRow {
  readonly id: string
  readonly type: string
  readonly occurred_at: Date | string
  readonly data: unknown
}

/** An event as the API and the webhooks show it. */
export const toEvent = (row: EventRow): Event =>
  ({
    id: row.id,
    type: row.type,
    timestamp: new Date(row.occurred_at).toISOString(),
    data: typeof row.data === "string" ? JSON.parse(row.data) : row.data
  }) as Event

/**
 * The events table. Events are written by triggers, in the transaction of the
 * change they describe (migration 0012): the SQL that reads, tests and sweeps
 * them is here.
 *
 * A page shows only events whose transaction is older than every transaction
 * still running (`pg_snapshot_xmin`), in (tx, seq) order: an event that
 * commits late never lands behind a cursor that already passed it.
 */
export class Events extends Context.Service<Events, {
  readonly list: (scope: EventScope, query: EventPageQuery) => Effect.Effect<EventPage, DatabaseError>
  /** Writes a `webhook.test` event only its key sees; returns its id. */
  readonly recordTest: (apiKeyId: string, data: Record<string, unknown>) => Effect.Effect<Event, DatabaseError>
  /** Deletes events older than the retention; returns how many. */
  readonly sweep: Effect.Effect<number, DatabaseError>
}>()("@petstore/server/events/Events") {
  static readonly layer = Layer.effect(
    Events,
    Effect.gen(function*() {
      const db = yield* Database

      const list = Effect.fnUntraced(function*(scope: EventScope, query: EventPageQuery) {
        // The position is read as text (xid8 has no JavaScript type) under another name than `tx`: ORDER BY
        // takes an output column's name first, and text would sort transaction 10 before 9.
        const rows = yield* db.query<EventRow & { readonly position_tx: string; readonly seq: number }>(sql`
          SELECT tx::text AS position_tx, seq, id, type, occurred_at, data FROM events
          WHERE tx < pg_snapshot_xmin(pg_current_snapshot())
            AND (tx, seq) > (${query.after.tx}::xid8, ${query.after.seq}::bigint)
            AND (${query.type ?? null}::text IS NULL OR type = ${query.type ?? null}::text)
            AND (audience = 'public' OR api_key_id = ${scope.apiKeyId}::text OR (${scope.staff}::boolean AND audience = 'owner'))
          ORDER BY tx, seq
          LIMIT ${query.limit}::integer`)
        const last = rows.at(-1)
        return {
          events: rows.map(toEvent),
          nextAfter: last === undefined ? query.after : { tx: String(last.position_tx), seq: Number(last.seq) }
        } satisfies EventPage
      }, traced("Events.list"))

      const recordTest = Effect.fnUntraced(function*(apiKeyId: string, data: Record<string, unknown>) {
        const [row] = yield* db.query<EventRow>(sql`
          INSERT INTO events (type, audience, api_key_id, data)
          VALUES ('webhook.test', 'private', ${apiKeyId}::text, ${JSON.stringify(data)}::jsonb)
          RETURNING id, type, occurred_at, data`)
        return toEvent(row!)
      }, traced("Events.recordTest"))

      const sweep = db.query<{ readonly swept: number }>(sql`
        WITH swept AS (DELETE FROM events WHERE occurred_at < now() - ${EVENT_RETENTION}::interval RETURNING 1)
        SELECT count(*)::integer AS swept FROM swept`).pipe(Effect.map(([row]) => row?.swept ?? 0))

      // Every process sweeps; two sweeps at once delete each row once. This only keeps the table small.
      yield* sweep.pipe(Effect.ignore, Effect.repeat(Schedule.spaced("1 hour")), Effect.forkScoped)

      return Events.of({ list, recordTest, sweep })
    })
  )
}
