import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import postgres from "postgres"
import { createTestDatabase, postgresAdminUrl } from "@petstore/test-support"
import { AppConfig } from "../src/config.ts"
import { Database } from "../src/db/Database.ts"
import { sql } from "../src/db/sql.ts"
import { type EventPosition, Events, START } from "../src/events/Events.ts"
import { Orders } from "../src/orders/Orders.ts"
import { Pets } from "../src/pets/Pets.ts"
import { type Backend, describeOnEachBackend, needsPostgres } from "./support/databases.ts"
import { transactionsOpenNow } from "./support/heldBack.ts"
import { testDatabase } from "./support/layers.ts"
import { settings } from "./support/settings.ts"

const services = (database: Layer.Layer<Database, unknown>) =>
  Layer.mergeAll(Events.layer, Pets.layer, Orders.layer).pipe(Layer.provideMerge(database))

const addKey = (id: string, role: "customer" | "staff") =>
  Effect.gen(function*() {
    const db = yield* Database
    yield* db.query(
      sql`INSERT INTO api_keys (id, secret_hash, name, plan, role) VALUES (${id}, ${`hash-${id}`}, ${id}, 'free', ${role})`
    )
  })

const everything = (scope: { apiKeyId: string; staff: boolean }, after: EventPosition = START) =>
  Effect.gen(function*() {
    return yield* (yield* Events).list(scope, { limit: 100, type: undefined, after })
  })

const staff = { apiKeyId: "staff", staff: true }

/**
 * Events are listed once every older transaction of the cluster has ended (Events.ts): on a shared server,
 * another database's transaction may hold them back for minutes (`heldBack.ts`). Waits for `count` events:
 * a bounded while once no transaction older than them is open, and as long as the test's hang guard before.
 */
const atLeast = (backend: Backend, scope: { apiKeyId: string; staff: boolean }, count: number) =>
  Effect.acquireUseRelease(
    Effect.promise(() => transactionsOpenNow(backend)),
    (older) =>
      Effect.gen(function*() {
        for (let attempt = 0; attempt < 500;) {
          const page = yield* everything(scope)
          if (page.events.length >= count) return page.events
          if (!(yield* Effect.promise(older.stillOpen))) attempt++
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        }
        return (yield* everything(scope)).events
      }),
    (older) => Effect.promise(older.end)
  )

describeOnEachBackend("Events", ({ name }) => {
  layer(services(testDatabase(name)), { timeout: 300_000 })((it) => {
    it.effect("each change writes its event in its own statement; a change that failed has none", () =>
      Effect.gen(function*() {
        const db = yield* Database
        const pets = yield* Pets
        const orders = yield* Orders
        yield* addKey("alice", "customer")
        yield* addKey("bob", "customer")
        yield* addKey("staff", "staff")
        const before = (yield* everything(staff)).events.length
        const { pet } = yield* pets.create({ name: "Rex", categoryId: 1, status: "available" })
        yield* pets.update(pet.id, { name: "Rex" }, { _tag: "Any" }) // changes nothing: no event
        yield* pets.update(pet.id, { name: "Max" }, { _tag: "Any" })
        const order = yield* orders.place(pet.id, "alice")
        yield* orders.move({ _tag: "Every" }, order.id, "delivered")
        const failed = yield* db.query(
          sql`WITH p AS (INSERT INTO pets (name, category_id, status) VALUES ('Ghost', 1, 'available') RETURNING id)
          SELECT 1 / 0 FROM p`
        ).pipe(Effect.flip)
        assert.ok(failed)

        const seen = (yield* atLeast(name, staff, before + 6)).slice(before)
        // The order's and its pet's events of one statement come in either order.
        const byType = (event: { type: string }) => event.type
        assert.deepStrictEqual(seen.map(byType).slice(0, 2), ["pet.created", "pet.updated"])
        assert.sameMembers(seen.map(byType).slice(2, 4), ["order.placed", "pet.updated"])
        assert.sameMembers(seen.map(byType).slice(4), ["order.delivered", "pet.updated"])
        const ofType = (type: string, nth = 0) => seen.filter((event) => event.type === type)[nth]!
        for (const event of seen) assert.match(event.id, /^evt_[0-9a-f]{32}$/)
        assert.deepStrictEqual(seen[1]!.data, { id: pet.id, name: "Max", categoryId: 1, status: "available" })
        assert.deepStrictEqual(ofType("pet.updated", 1).data, {
          id: pet.id,
          name: "Max",
          categoryId: 1,
          status: "pending"
        })
        assert.deepStrictEqual(ofType("pet.updated", 2).data, {
          id: pet.id,
          name: "Max",
          categoryId: 1,
          status: "sold"
        })
        assert.deepStrictEqual(ofType("order.placed").data, order)
        assert.strictEqual((ofType("order.delivered").data as { status: string }).status, "delivered")
        assert.isFalse(seen.some((event) => JSON.stringify(event.data).includes("Ghost")))

        // Bob sees the pet events, not Alice's order; Alice sees both.
        const bob = (yield* everything({ apiKeyId: "bob", staff: false })).events
          .filter((event) => seen.some((mine) => mine.id === event.id))
        assert.deepStrictEqual(bob.map((event) => event.type), [
          "pet.created",
          "pet.updated",
          "pet.updated",
          "pet.updated"
        ])
        const alice = (yield* everything({ apiKeyId: "alice", staff: false })).events
          .filter((event) => seen.some((mine) => mine.id === event.id))
        assert.strictEqual(alice.length, 6)
      }))

    it.effect("pages are keyset pages, newest last, and filter by type", () =>
      Effect.gen(function*() {
        const pets = yield* Pets
        const events = yield* Events
        for (let i = 0; i < 5; i++) yield* pets.create({ name: `Pet ${i}`, categoryId: 2, status: "available" })
        const all = yield* atLeast(name, staff, 5)
        let after = START
        const paged: Array<string> = []
        for (;;) {
          const page = yield* events.list(staff, { limit: 2, type: "pet.created", after })
          if (page.events.length === 0) {
            // The end of the log: the page reads on from where it started.
            assert.deepStrictEqual(page.nextAfter, after)
            break
          }
          paged.push(...page.events.map((event) => event.id))
          after = page.nextAfter
        }
        assert.deepStrictEqual(paged, all.filter((event) => event.type === "pet.created").map((event) => event.id))
      }))

    it.effect("the sweep keeps events younger than the retention", () =>
      Effect.gen(function*() {
        const db = yield* Database
        const events = yield* Events
        const count = () => db.query<{ n: number }>(sql`SELECT count(*)::integer AS n FROM events`)
        const [before] = yield* count()
        yield* db.query(sql`INSERT INTO events (type, audience, data, occurred_at)
          VALUES ('pet.created', 'public', '{}'::jsonb, now() - interval '31 days')`)
        assert.strictEqual(yield* events.sweep, 1)
        assert.deepStrictEqual(yield* count(), [before!])
      }))

    it.effect("pages follow transaction ids as numbers, across a change in their number of digits", () =>
      Effect.gen(function*() {
        const db = yield* Database
        const events = yield* Events
        // Transaction ids 9, 10 and 11, long ended: as text, "10" and "11" would sort before "9".
        yield* db.query(sql`INSERT INTO events (tx, type, audience, data)
          SELECT n::text::xid8, 'pet.created', 'public', jsonb_build_object('digits', n) FROM unnest(ARRAY[9, 10, 11]) AS n`)
        const digits = (page: { events: ReadonlyArray<{ data: unknown }> }) =>
          page.events.map((event) => (event.data as { digits?: number }).digits)
        assert.deepStrictEqual(digits(yield* events.list(staff, { limit: 3, type: undefined, after: START })), [
          9,
          10,
          11
        ])
        // A page at a time: each once, in order, then the rest of the log.
        const walked: Array<number | undefined> = []
        let after = START
        for (let page = 0; page < 3; page++) {
          const one = yield* events.list(staff, { limit: 1, type: undefined, after })
          walked.push(...digits(one))
          after = one.nextAfter
        }
        assert.deepStrictEqual(walked, [9, 10, 11])
        const rest = yield* events.list(staff, { limit: 100, type: undefined, after })
        assert.isFalse(digits(rest).some((n) => n !== undefined))
        yield* db.query(sql`DELETE FROM events WHERE tx IN ('9', '10', '11')`)
      }))
  })
})

describe("Events on postgres, with transactions that commit out of order", needsPostgres, () => {
  layer(
    Layer.unwrap(Effect.gen(function*() {
      const database = yield* Effect.acquireRelease(
        Effect.promise(() => createTestDatabase(postgresAdminUrl!)),
        (database) => Effect.promise(() => database.drop())
      )
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => postgres(database.url, { max: 2, onnotice: () => {} })),
        (client) => Effect.promise(() => client.end())
      )
      return services(Database.layer.pipe(
        Layer.provide(AppConfig.layerWith({ databaseUrl: Option.some(settings.databaseUrl(database.url)) }))
      )).pipe(Layer.merge(Layer.succeed(RawClient, client)))
    })),
    { timeout: 300_000 }
  )((it) => {
    it.effect("a cursor never passes an event whose transaction has not committed yet", () =>
      Effect.gen(function*() {
        const client = yield* RawClient
        const events = yield* Events
        const early = yield* Effect.promise(() => client.reserve())
        // The early transaction writes first (lower tx, lower seq) and commits last.
        yield* Effect.promise(() => early`BEGIN`)
        yield* Effect.promise(() =>
          early`INSERT INTO pets (name, category_id, status) VALUES ('Early', 1, 'available')`
        )
        yield* Effect.promise(() =>
          client`INSERT INTO pets (name, category_id, status) VALUES ('Late', 1, 'available')`
        )
        // "Late" is listed once every other transaction of the cluster has ended, but never before "Early".
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
        const first = yield* events.list(staff, { limit: 100, type: undefined, after: START })
        // Neither is shown yet: "Late" committed, but an older transaction is still open.
        assert.deepStrictEqual(first.events.map((event) => (event.data as { name: string }).name), [])
        yield* Effect.promise(() => early`COMMIT`)
        early.release()
        const second = yield* atLeast("postgres", staff, 2)
        assert.deepStrictEqual(second.map((event) => (event.data as { name: string }).name), ["Early", "Late"])
      }))
  })
})

import { Context } from "effect"
class RawClient extends Context.Service<RawClient, postgres.Sql>()("test/RawClient") {}
