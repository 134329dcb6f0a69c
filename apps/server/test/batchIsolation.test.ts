import { assert, describe, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import { Database } from "../src/db/Database.ts"
import { sql } from "../src/db/sql.ts"
import { PetMissing } from "../src/pets/PetRefusals.ts"
import { Pets } from "../src/pets/Pets.ts"
import { type AdmitRequest, QuotaStore } from "../src/quota/QuotaStore.ts"
import { backends, suiteOptions } from "./support/databases.ts"
import { testDatabase } from "./support/layers.ts"

const admission = (subject: string): AdmitRequest => ({
  subject,
  now: Date.UTC(2026, 0, 1, 12),
  perMinute: 10,
  perDay: 100,
  banThreshold: 10,
  banMillis: 900_000,
  consume: true
})

/**
 * A batch must never fail more requests than the one that caused the failure.
 * The database refuses the statement for one member of a batch (a trigger
 * stands for any refusal: an index row too large, a value out of range); the
 * others are answered, each counted exactly once.
 */
for (const { name } of backends) {
  describe(`a poisoned member of a quota batch on ${name}`, suiteOptions(name), () => {
    layer(QuotaStore.postgres.pipe(Layer.provideMerge(testDatabase(name))), { timeout: 300_000 })((it) => {
      it.effect("fails alone; the requests batched with it are admitted and counted once", () =>
        Effect.gen(function*() {
          const db = yield* Database
          const store = yield* QuotaStore
          yield* db.query(sql`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.subject = 'key:poison' THEN RAISE EXCEPTION 'poisoned batch member'; END IF;
              RETURN NEW;
            END $$`)
          yield* db.query(sql`CREATE TRIGGER refuse_poison BEFORE INSERT ON quota_usage
            FOR EACH ROW EXECUTE FUNCTION refuse_poison()`)

          const subjects = ["key:a", "key:b", "key:poison", "key:c", "key:a", "key:d", "key:e", "key:f"]
          const exits = yield* Effect.all(subjects.map((subject) => Effect.exit(store.admit(admission(subject)))), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(exits.map(Exit.isSuccess), [true, true, false, true, true, true, true, true])
          const counts = exits.flatMap((exit) => Exit.isSuccess(exit) ? [exit.value.minuteCount] : [])
          // key:a twice, in order; every other subject once: nothing of the refused statement was kept.
          assert.deepStrictEqual(counts, [1, 1, 1, 2, 1, 1, 1])
          const rows = yield* db.query<{ subject: string; minute_count: number }>(
            sql`SELECT subject, minute_count FROM quota_usage ORDER BY subject`
          )
          assert.deepStrictEqual(rows.map((row) => [row.subject, row.minute_count]), [
            ["key:a", 2],
            ["key:b", 1],
            ["key:c", 1],
            ["key:d", 1],
            ["key:e", 1],
            ["key:f", 1]
          ])
        }))

      it.effect("a subject no index could hold is refused before it is batched, alone", () =>
        Effect.gen(function*() {
          const store = yield* QuotaStore
          const exits = yield* Effect.all(
            ["key:g", `address:${"x".repeat(2400)}`, "key:h"].map((subject) =>
              Effect.exit(store.admit(admission(subject)))
            ),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(exits.map(Exit.isSuccess), [true, false, true])
        }))
    })
  })
}

/**
 * A request's own refusal is its entry's alone: in a batch of pet reads, an id
 * no pet has fails with `PetMissing` and the others are answered. A statement
 * the database refuses (an id beyond `bigint`) is answered again one request at
 * a time, and the refusals come back as they would have from the batch.
 */
for (const { name } of backends) {
  describe(`a batch of pet reads on ${name}`, suiteOptions(name), () => {
    layer(Pets.layer.pipe(Layer.provideMerge(testDatabase(name))), { timeout: 300_000 })((it) => {
      it.effect("answers each read: a missing pet is PetMissing, a poisoned id fails alone", () =>
        Effect.gen(function*() {
          const pets = yield* Pets
          const [first, second] = yield* Effect.all([
            pets.create({ name: "Rex", categoryId: 1, status: "available" }),
            pets.create({ name: "Tom", categoryId: 2, status: "available" })
          ], { concurrency: "unbounded" })
          const missing = second.pet.id + 1000
          const read = (ids: ReadonlyArray<number>) =>
            Effect.all(ids.map((id) => Effect.exit(pets.get(id))), { concurrency: "unbounded" })
          const outcome = (exit: Exit.Exit<unknown, unknown>) =>
            Exit.isSuccess(exit) ? exit.value : Cause.squash(exit.cause)

          const together = yield* read([first.pet.id, missing, second.pet.id, missing])
          assert.deepStrictEqual(together.map(outcome), [
            first,
            new PetMissing({ petId: missing }),
            second,
            new PetMissing({ petId: missing })
          ])

          const poisoned = yield* read([first.pet.id, 2 ** 63, missing])
          assert.deepStrictEqual(outcome(poisoned[0]!), first)
          const refused = outcome(poisoned[1]!)
          assert.strictEqual((refused as { readonly _tag?: unknown })._tag, "DatabaseError")
          assert.deepStrictEqual(outcome(poisoned[2]!), new PetMissing({ petId: missing }))
        }))
    })
  })
}
