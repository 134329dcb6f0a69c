import { assert, layer } from "@effect/vitest"
import { AUDIT_RETENTION_DAYS } from "@petstore/contract"
import { Effect, Layer } from "effect"
import { AdminAudit } from "../src/auth/AdminAudit.ts"
import { Database } from "../src/db/Database.ts"
import { sql } from "../src/db/sql.ts"
import { describeOnEachBackend } from "./support/databases.ts"
import { testDatabase } from "./support/layers.ts"

describeOnEachBackend("AdminAudit", ({ name }) => {
  layer(AdminAudit.layer.pipe(Layer.provideMerge(testDatabase(name))), { timeout: 300_000 })((it) => {
    it.effect("the sweep deletes entries past the retention and keeps the others", () =>
      Effect.gen(function*() {
        const db = yield* Database
        const audit = yield* AdminAudit
        const entry = (id: string, daysAgo: number) =>
          db.query(sql`
            INSERT INTO admin_audit (occurred_at, action, api_key_id, changes, client_address)
            VALUES (now() - ${`${daysAgo} days`}::interval, 'key.revoked', ${id}, '{}'::jsonb, '127.0.0.1')`)
        yield* entry("key_000000000000old1", AUDIT_RETENTION_DAYS + 1)
        yield* entry("key_000000000000old2", AUDIT_RETENTION_DAYS + 30)
        yield* entry("key_00000000000young", AUDIT_RETENTION_DAYS - 1)
        // The layer's own sweep may run meanwhile and take some of them: what counts is what is left.
        yield* audit.sweep
        const page = yield* audit.list({ keyId: undefined, action: undefined, limit: 10, before: 0 })
        assert.deepStrictEqual(page.entries.map((kept) => kept.keyId), ["key_00000000000young"])
      }))
  })
})
