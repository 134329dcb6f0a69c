import { AUDIT_RETENTION_DAYS, type AuditAction } from "@petstore/contract"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"

/** The most rows the trail keeps, whatever the retention: the oldest go first. */
export const AUDIT_MAX_ROWS = 1_000_000

export interface AuditRecord {
  readonly id: number
  readonly occurredAt: Date
  readonly action: AuditAction
  readonly keyId: string
  readonly changes: Record<string, unknown>
  readonly clientAddress: string
}

export interface AuditPageQuery {
  readonly keyId: string | undefined
  readonly action: AuditAction | undefined
  readonly limit: number
  /** The last id of the previous page (newest first); 0 for the first page. */
  readonly before: number
}

interface AuditRow {
  readonly id: number | string
  readonly occurred_at: Date | string
  readonly action: AuditAction
  readonly api_key_id: string
  readonly changes: Record<string, unknown> | string
  readonly client_address: string
}

/**
 * The admin_audit table: reading and bounding it. Its rows are written by
 * ApiKeys, in the very statement of each change (see migration 0018).
 */
export class AdminAudit extends Context.Service<AdminAudit, {
  readonly list: (
    query: AuditPageQuery
  ) => Effect.Effect<
    { readonly entries: ReadonlyArray<AuditRecord>; readonly nextBefore: Option.Option<number> },
    DatabaseError
  >
  /** Deletes entries past the retention or beyond the row cap; returns how many. */
  readonly sweep: Effect.Effect<number, DatabaseError>
}>()("@petstore/server/auth/AdminAudit") {
  static readonly layer = Layer.effect(
    AdminAudit,
    Effect.gen(function*() {
      const db = yield* Database

      const list = Effect.fnUntraced(function*(query: AuditPageQuery) {
        const rows = yield* db.query<AuditRow>(sql`
          SELECT id, occurred_at, action, api_key_id, changes, client_address FROM admin_audit
          WHERE (${query.before}::bigint = 0 OR id < ${query.before}::bigint)
            AND (${query.keyId ?? null}::text IS NULL OR api_key_id = ${query.keyId ?? null}::text)
            AND (${query.action ?? null}::text IS NULL OR action = ${query.action ?? null}::text)
          ORDER BY id DESC
          LIMIT ${query.limit + 1}::integer`)
        const entries = rows.slice(0, query.limit).map((row): AuditRecord => ({
          id: Number(row.id),
          occurredAt: new Date(row.occurred_at),
          action: row.action,
          keyId: row.api_key_id,
          changes: typeof row.changes === "string" ? JSON.parse(row.changes) : row.changes,
          clientAddress: row.client_address
        }))
        const last = entries.at(-1)
        return {
          entries,
          nextBefore: rows.length > query.limit && last !== undefined ? Option.some(last.id) : Option.none()
        }
      }, traced("AdminAudit.list"))

      const sweep = db.query<{ readonly swept: number }>(sql`
        WITH swept AS (
          DELETE FROM admin_audit
          WHERE occurred_at < now() - ${`${AUDIT_RETENTION_DAYS} days`}::interval
             OR id <= (SELECT id FROM admin_audit ORDER BY id DESC OFFSET ${AUDIT_MAX_ROWS}::integer LIMIT 1)
          RETURNING 1
        )
        SELECT count(*)::integer AS swept FROM swept`).pipe(Effect.map(([row]) => row?.swept ?? 0))

      // Every process sweeps; two sweeps at once delete each row once. This only keeps the table bounded.
      yield* sweep.pipe(Effect.ignore, Effect.repeat(Schedule.spaced("1 hour")), Effect.forkScoped)

      return AdminAudit.of({ list, sweep })
    })
  )
}
