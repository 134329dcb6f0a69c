import type { Event } from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { arrayLiteral, sql } from "../db/sql.ts"
import { type EventRow, toEvent } from "../events/Events.ts"
import { traced } from "../observability/spans.ts"
import { EndpointMissing, EventNotRedeliverable } from "./WebhookRefusals.ts"

/**
 * A claimed delivery is this process's for so long: longer than one attempt
 * can take (15 s). A process that dies mid-delivery leaves it to be claimed
 * again after that, with the same `webhook-id`.
 */
export const LEASE_MILLIS = 30_000

/** One event to deliver to one endpoint, as claimed. */
export interface ClaimedDelivery {
  readonly messageId: number
  readonly attempt: number
  readonly endpointId: string
  readonly url: string
  /** The secrets that sign it: the current one, and the previous during its overlap. */
  readonly secrets: ReadonlyArray<string>
  readonly failingSince: Option.Option<Date>
  readonly event: Event
  readonly occurredAt: Date
}

export interface AttemptRecord {
  readonly attemptedAt: Date
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
}

/** What follows an attempt: done, tried again later, given up, or the endpoint disabled. */
export type AttemptOutcome =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "Retry"; readonly at: Date }
  | { readonly _tag: "GiveUp" }
  | { readonly _tag: "Disable"; readonly reason: string }

export interface FinishedAttempt {
  readonly delivery: ClaimedDelivery
  readonly record: AttemptRecord
  readonly outcome: AttemptOutcome
}

export interface AttemptView {
  readonly eventId: string
  readonly attempt: number
  readonly attemptedAt: string
  readonly outcome: "succeeded" | "failed"
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  readonly nextAttemptAt: string | null
}

interface ClaimRow extends EventRow {
  readonly message_id: number
  readonly attempts: number
  readonly endpoint_id: string
  readonly url: string
  readonly secret: string
  readonly previous_secret: string | null
  readonly failing_since: Date | string | null
}

/**
 * The delivery queue (`webhook_messages`) and its record (`webhook_attempts`):
 * all of their SQL. Events are queued by the database itself, in the
 * transaction that wrote them (migration 0013); this module claims, finishes,
 * and queues again on request.
 */
export class Deliveries extends Context.Service<Deliveries, {
  /** Claims up to `limit` due deliveries for `LEASE_MILLIS`, skipping those another process holds. */
  readonly claim: (now: Date, limit: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, DatabaseError>
  /** Records a batch's attempts and what follows each, in one statement. */
  readonly finish: (finished: ReadonlyArray<FinishedAttempt>) => Effect.Effect<void, DatabaseError>
  /** Queues a `webhook.test` event for one endpoint of the key; returns the event's id. */
  readonly queueTest: (apiKeyId: string, endpointId: string) => Effect.Effect<string, EndpointMissing | DatabaseError>
  /**
   * Queues an event the key can see for one of its endpoints again. The caller checks the endpoint first: an
   * endpoint gone since is refused as the event is.
   */
  readonly redeliver: (
    caller: { readonly apiKeyId: string; readonly staff: boolean },
    endpointId: string,
    eventId: string
  ) => Effect.Effect<void, EventNotRedeliverable | DatabaseError>
  /** The endpoint's latest 100 attempts, newest first. */
  readonly attempts: (
    apiKeyId: string,
    endpointId: string
  ) => Effect.Effect<ReadonlyArray<AttemptView>, EndpointMissing | DatabaseError>
  /** Deliveries queued and not yet finished, and the age of the oldest due one, in seconds. */
  readonly depth: Effect.Effect<{ readonly queued: number; readonly oldestDueSeconds: number }, DatabaseError>
}>()("@petstore/server/webhooks/Deliveries") {
  static readonly layer = Layer.effect(
    Deliveries,
    Effect.gen(function*() {
      const db = yield* Database

      const claim = Effect.fnUntraced(function*(now: Date, limit: number) {
        const rows = yield* db.query<ClaimRow>(sql`
          WITH due AS (
            SELECT m.id FROM webhook_messages AS m
            WHERE m.next_attempt_at <= ${now.toISOString()}::timestamptz
            ORDER BY m.next_attempt_at
            LIMIT ${limit}::integer
            FOR UPDATE SKIP LOCKED
          ), claimed AS (
            UPDATE webhook_messages AS m
            SET attempts = m.attempts + 1,
                next_attempt_at = ${now.toISOString()}::timestamptz + ${`${LEASE_MILLIS} milliseconds`}::interval
            FROM due WHERE m.id = due.id
            RETURNING m.id, m.attempts, m.endpoint_id, m.event_id
          )
          SELECT c.id AS message_id, c.attempts, c.endpoint_id, e.url, e.secret,
            CASE WHEN e.previous_secret_expires_at > ${now.toISOString()}::timestamptz THEN e.previous_secret END AS previous_secret,
            e.failing_since, ev.id, ev.type, ev.occurred_at, ev.data
          FROM claimed AS c
          JOIN webhook_endpoints AS e ON e.id = c.endpoint_id
          JOIN events AS ev ON ev.id = c.event_id`)
        return rows.map((row): ClaimedDelivery => ({
          messageId: Number(row.message_id),
          attempt: Number(row.attempts),
          endpointId: row.endpoint_id,
          url: row.url,
          secrets: row.previous_secret === null ? [row.secret] : [row.secret, row.previous_secret],
          failingSince: Option.map(Option.fromNullishOr(row.failing_since), (at) => new Date(at)),
          event: toEvent(row),
          occurredAt: new Date(row.occurred_at)
        }))
      }, traced("Deliveries.claim"))

      // A whole batch's outcomes in one statement: the attempts, the queue's retries and removals, and each
      // endpoint's failure record (a success clears it; a disabling drops the endpoint's queue).
      const finish = Effect.fnUntraced(function*(finished: ReadonlyArray<FinishedAttempt>) {
        if (finished.length === 0) return
        const column = <A extends string | number | boolean | null>(pick: (f: FinishedAttempt) => A) =>
          arrayLiteral(finished.map(pick))
        yield* db.query(sql`
          WITH input AS (
            SELECT * FROM unnest(
              ${column((f) => f.delivery.messageId)}::bigint[],
              ${column((f) => f.delivery.endpointId)}::text[],
              ${column((f) => f.delivery.event.id)}::text[],
              ${column((f) => f.delivery.attempt)}::integer[],
              ${column((f) => f.record.attemptedAt.toISOString())}::timestamptz[],
              ${column((f) => f.outcome._tag === "Succeeded" ? "succeeded" : "failed")}::text[],
              ${column((f) => f.record.statusCode)}::integer[],
              ${column((f) => f.record.latencyMs)}::integer[],
              ${column((f) => f.record.error)}::text[],
              ${column((f) => f.outcome._tag === "Retry" ? f.outcome.at.toISOString() : null)}::timestamptz[],
              ${column((f) => f.outcome._tag === "Disable" ? f.outcome.reason : null)}::text[]
            ) AS i(message_id, endpoint_id, event_id, attempt, attempted_at, outcome, status_code, latency_ms, error, retry_at, disable)
          ), attempt AS (
            INSERT INTO webhook_attempts (endpoint_id, event_id, attempt, attempted_at, outcome, status_code, latency_ms, error, next_attempt_at)
            SELECT i.endpoint_id, i.event_id, i.attempt, i.attempted_at, i.outcome, i.status_code, i.latency_ms, i.error, i.retry_at
            FROM input AS i JOIN webhook_endpoints AS e ON e.id = i.endpoint_id
          ), retried AS (
            UPDATE webhook_messages AS m SET next_attempt_at = i.retry_at
            FROM input AS i WHERE m.id = i.message_id AND i.retry_at IS NOT NULL
          ), done AS (
            DELETE FROM webhook_messages AS m USING input AS i
            WHERE (m.id = i.message_id AND i.retry_at IS NULL) OR (i.disable IS NOT NULL AND m.endpoint_id = i.endpoint_id)
          ), state AS (
            SELECT endpoint_id, bool_or(outcome = 'succeeded') AS succeeded,
              min(attempted_at) FILTER (WHERE outcome = 'failed') AS first_failure, max(disable) AS disable
            FROM input GROUP BY endpoint_id
          )
          UPDATE webhook_endpoints AS e SET
            failing_since = CASE WHEN s.succeeded THEN NULL ELSE COALESCE(e.failing_since, s.first_failure) END,
            enabled = e.enabled AND s.disable IS NULL,
            disabled_reason = COALESCE(s.disable, e.disabled_reason)
          FROM state AS s WHERE e.id = s.endpoint_id`)
      }, traced("Deliveries.finish"))

      const queueTest = Effect.fnUntraced(function*(apiKeyId: string, endpointId: string) {
        const [row] = yield* db.query<{ readonly id: string }>(sql`
          WITH endpoint AS (
            SELECT id FROM webhook_endpoints WHERE api_key_id = ${apiKeyId} AND id = ${endpointId}
          ), event AS (
            INSERT INTO events (type, audience, api_key_id, data)
            SELECT 'webhook.test', 'private', ${apiKeyId},
              jsonb_build_object('endpointId', endpoint.id, 'message', 'A test event, sent on request')
            FROM endpoint
            RETURNING id
          ), queued AS (
            INSERT INTO webhook_messages (endpoint_id, event_id) SELECT ${endpointId}, id FROM event
          )
          SELECT id FROM event`)
        if (row === undefined) return yield* new EndpointMissing({ endpointId })
        yield* db.query(sql`SELECT pg_notify('webhook_messages', '')`)
        return row.id
      }, traced("Deliveries.queueTest"))

      const redeliver = Effect.fnUntraced(function*(
        caller: { readonly apiKeyId: string; readonly staff: boolean },
        endpointId: string,
        eventId: string
      ) {
        const rows = yield* db.query(sql`
          INSERT INTO webhook_messages (endpoint_id, event_id)
          SELECT e.id, ev.id FROM webhook_endpoints AS e, events AS ev
          WHERE e.api_key_id = ${caller.apiKeyId} AND e.id = ${endpointId} AND ev.id = ${eventId}
            AND (ev.audience = 'public' OR ev.api_key_id = ${caller.apiKeyId} OR (${caller.staff}::boolean AND ev.audience = 'owner'))
          RETURNING id`)
        if (rows.length === 0) return yield* new EventNotRedeliverable({ eventId })
        yield* db.query(sql`SELECT pg_notify('webhook_messages', '')`)
      }, traced("Deliveries.redeliver"))

      const attempts = Effect.fnUntraced(function*(apiKeyId: string, endpointId: string) {
        const owned = yield* db.query(
          sql`SELECT 1 FROM webhook_endpoints WHERE api_key_id = ${apiKeyId} AND id = ${endpointId}`
        )
        if (owned.length === 0) return yield* new EndpointMissing({ endpointId })
        const rows = yield* db.query<{
          readonly event_id: string
          readonly attempt: number
          readonly attempted_at: Date | string
          readonly outcome: "succeeded" | "failed"
          readonly status_code: number | null
          readonly latency_ms: number
          readonly error: string | null
          readonly next_attempt_at: Date | string | null
        }>(sql`
          SELECT event_id, attempt, attempted_at, outcome, status_code, latency_ms, error, next_attempt_at
          FROM webhook_attempts WHERE endpoint_id = ${endpointId}
          ORDER BY id DESC LIMIT 100`)
        return rows.map((row): AttemptView => ({
          eventId: row.event_id,
          attempt: row.attempt,
          attemptedAt: new Date(row.attempted_at).toISOString(),
          outcome: row.outcome,
          statusCode: row.status_code,
          latencyMs: row.latency_ms,
          error: row.error,
          nextAttemptAt: row.next_attempt_at === null ? null : new Date(row.next_attempt_at).toISOString()
        }))
      }, traced("Deliveries.attempts"))

      const depth = db.query<{ readonly queued: number; readonly oldest: number | null }>(sql`
        SELECT count(*)::integer AS queued,
          EXTRACT(EPOCH FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()))::float8 AS oldest
        FROM webhook_messages`).pipe(
        Effect.map(([row]) => ({ queued: row?.queued ?? 0, oldestDueSeconds: Math.max(0, row?.oldest ?? 0) }))
      )

      return Deliveries.of({ claim, finish, queueTest, redeliver, attempts, depth })
    })
  )
}
