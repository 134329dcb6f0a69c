import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { startWebhookReceiver } from "@petstore/test-support"
import { AppConfig, type AppConfigValues } from "../src/config.ts"
import { Database } from "../src/db/Database.ts"
import { sql } from "../src/db/sql.ts"
import { Events } from "../src/events/Events.ts"
import { Deliveries } from "../src/webhooks/Deliveries.ts"
import { Dispatcher, WebhookResolver } from "../src/webhooks/Dispatcher.ts"
import { RETRY_DELAYS_MILLIS } from "../src/webhooks/schedule.ts"
import { WebhookDesk } from "../src/webhooks/WebhookDesk.ts"
import { WebhookEndpoints } from "../src/webhooks/WebhookEndpoints.ts"
import { freshPgliteFolder } from "./support/databaseTemplates.ts"

/** The webhook services over a fresh PGlite database, the dispatcher's loop off: each test drives `runOnce` itself. */
const services = (overrides: Partial<AppConfigValues>) =>
  Layer.unwrap(Effect.gen(function*() {
    const folder = yield* Effect.acquireRelease(Effect.sync(freshPgliteFolder), (folder) => Effect.sync(folder.remove))
    const config = AppConfig.layerWith({
      dataDir: folder.dataDir,
      databaseUrl: Option.none(),
      webhookDelivery: false,
      ...overrides
    })
    return Layer.mergeAll(Dispatcher.layer, WebhookDesk.layer).pipe(
      Layer.provideMerge(Layer.mergeAll(Events.layer, WebhookEndpoints.layer, Deliveries.layer)),
      Layer.provideMerge(Database.layer),
      Layer.provideMerge(config)
    )
  }))

const receiver = Effect.acquireRelease(Effect.promise(() => startWebhookReceiver()), (r) => Effect.promise(r.close))

/** A new customer key; the tests share a database, so earlier tests' endpoints are disabled first. */
const customer = (id: string) =>
  Effect.gen(function*() {
    const db = yield* Database
    yield* db.query(sql`UPDATE webhook_endpoints SET enabled = false`)
    yield* db.query(sql`DELETE FROM webhook_messages`)
    yield* db.query(
      sql`INSERT INTO api_keys (id, secret_hash, name, plan) VALUES (${id}, ${`hash-${id}`}, ${id}, 'free')`
    )
    return { id, role: "customer" as const }
  })

/**
 * A pet created, and its deliveries made due at the TestClock's start (the Unix epoch): the database stamps
 * them with its own time, which the TestClock does not move. Setting the TestClock to today instead would run
 * every periodic task of the layers (the hourly sweep) for 56 years of test time.
 */
const createPet = (name: string) =>
  Effect.gen(function*() {
    const db = yield* Database
    yield* db.query(sql`INSERT INTO pets (name, category_id, status) VALUES (${name}, 1, 'available')`)
    yield* db.query(sql`UPDATE webhook_messages SET next_attempt_at = to_timestamp(0) WHERE attempts = 0`)
  })

describe("webhook delivery, with the server's time on a TestClock", () => {
  layer(services({ webhookAllowHttp: true, webhookAllowPrivateAddresses: true }), { timeout: 120_000 })((it) => {
    it.effect("a failing receiver is retried on the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, ±10 %), with the same webhook-id, then given up", () =>
      Effect.gen(function*() {
        const target = yield* receiver
        target.answerWith((_request, response) => response.writeHead(500).end("down"))
        const desk = yield* WebhookDesk
        const dispatcher = yield* Dispatcher
        const deliveries = yield* Deliveries
        const key = yield* customer("schedule")
        const endpoint = yield* desk.create(key, { url: target.url, eventTypes: ["pet.created"] })
        yield* createPet("Retried")

        assert.strictEqual(yield* dispatcher.runOnce, 1, "the first attempt is immediate")
        for (const delay of RETRY_DELAYS_MILLIS) {
          yield* TestClock.adjust(Math.floor(delay * 0.9) - 1)
          assert.strictEqual(yield* dispatcher.runOnce, 0, `not before 90 % of ${delay} ms`)
          yield* TestClock.adjust(Math.ceil(delay * 0.2) + 2)
          assert.strictEqual(yield* dispatcher.runOnce, 1, `by 110 % of ${delay} ms`)
        }
        assert.strictEqual(target.received.length, 10)
        assert.strictEqual(new Set(target.received.map((webhook) => webhook.headers["webhook-id"])).size, 1)
        const attempts = yield* deliveries.attempts(key.id, endpoint.id)
        assert.deepStrictEqual(attempts.map((attempt) => attempt.attempt), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
        assert.isNull(attempts[0]!.nextAttemptAt, "given up after the tenth attempt")
        assert.isTrue(attempts.every((attempt) => attempt.statusCode === 500 && attempt.error === "answered 500"))
        yield* TestClock.adjust(48 * 3_600_000)
        assert.strictEqual(yield* dispatcher.runOnce, 0)
      }))

    it.effect("429 and 503 with Retry-After are retried no sooner than it says", () =>
      Effect.gen(function*() {
        const target = yield* receiver
        target.answerWith((_request, response) => response.writeHead(503, { "retry-after": "120" }).end())
        const desk = yield* WebhookDesk
        const dispatcher = yield* Dispatcher
        const key = yield* customer("retry-after")
        yield* desk.create(key, { url: target.url, eventTypes: ["pet.created"] })
        yield* createPet("Patience")
        assert.strictEqual(yield* dispatcher.runOnce, 1)
        yield* TestClock.adjust(119_000)
        assert.strictEqual(yield* dispatcher.runOnce, 0, "the schedule's 5 s gives way to Retry-After: 120")
        target.answerWith((_request, response) => response.writeHead(204).end())
        yield* TestClock.adjust(2_000)
        assert.strictEqual(yield* dispatcher.runOnce, 1)
        yield* TestClock.adjust(3_600_000)
        assert.strictEqual(yield* dispatcher.runOnce, 0, "delivered: nothing left")
      }))

    it.effect("an expired key's endpoints get no new events, as a revoked key's", () =>
      Effect.gen(function*() {
        const target = yield* receiver
        const desk = yield* WebhookDesk
        const db = yield* Database
        const key = yield* customer("expiring")
        const endpoint = yield* desk.create(key, { url: target.url, eventTypes: ["pet.created"] })
        const queued = Effect.map(
          db.query<{ n: number }>(
            sql`SELECT count(*)::integer AS n FROM webhook_messages WHERE endpoint_id = ${endpoint.id}`
          ),
          ([row]) => row!.n
        )
        yield* createPet("Before")
        assert.strictEqual(yield* queued, 1)
        // The trigger judges expiry by the database's clock.
        yield* db.query(sql`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${key.id}`)
        yield* createPet("After")
        assert.strictEqual(yield* queued, 1, "nothing queued after the key expired")
      }))

    it.effect("an endpoint failing for 5 days is disabled, saying so, and its queue dropped", () =>
      Effect.gen(function*() {
        const target = yield* receiver
        target.answerWith((_request, response) => response.writeHead(500).end())
        const desk = yield* WebhookDesk
        const dispatcher = yield* Dispatcher
        const db = yield* Database
        const key = yield* customer("five-days")
        const endpoint = yield* desk.create(key, { url: target.url, eventTypes: ["pet.created"] })
        yield* createPet("One")
        yield* createPet("Two")
        assert.strictEqual(yield* dispatcher.runOnce, 2)
        // Failing since the first attempt; five days on, the next failure disables it.
        yield* db.query(
          sql`UPDATE webhook_endpoints SET failing_since = failing_since - interval '5 days' WHERE id = ${endpoint.id}`
        )
        yield* TestClock.adjust(6_000)
        assert.isAtLeast(yield* dispatcher.runOnce, 1)
        const now = yield* desk.get(key, endpoint.id)
        assert.isFalse(now.enabled)
        assert.strictEqual(now.disabledReason, "deliveries failed for 5 days")
        const [queued] = yield* db.query<{ n: number }>(
          sql`SELECT count(*)::integer AS n FROM webhook_messages WHERE endpoint_id = ${endpoint.id}`
        )
        assert.strictEqual(queued!.n, 0)
        yield* createPet("Three")
        yield* TestClock.adjust(3_600_000)
        assert.strictEqual(yield* dispatcher.runOnce, 0, "a disabled endpoint gets nothing queued")
      }))
  })
})

describe("webhook delivery refuses private addresses at connect time", () => {
  const rebound = new Map<string, string>()
  const resolver = Layer.succeed(WebhookResolver, async (hostname: string) => {
    const address = rebound.get(hostname)
    if (address === undefined) throw new Error(`${hostname} does not resolve`)
    return [{ address, family: 4 }]
  })
  layer(services({ webhookAllowHttp: true, webhookAllowPrivateAddresses: false }).pipe(Layer.provideMerge(resolver)), {
    timeout: 120_000
  })((it) => {
    it.effect("a name that resolves to 127.0.0.1 after registration is refused, and nothing reaches the address", () =>
      Effect.gen(function*() {
        const target = yield* receiver
        const desk = yield* WebhookDesk
        const dispatcher = yield* Dispatcher
        const deliveries = yield* Deliveries
        const key = yield* customer("rebinding")
        // At registration the name is only a name: nothing about it is refused.
        const endpoint = yield* desk.create(key, {
          url: `http://rebinding.example:${target.port}/hook`,
          eventTypes: ["pet.created"]
        })
        rebound.set("rebinding.example", "127.0.0.1")
        yield* createPet("Rebound")
        assert.strictEqual(yield* dispatcher.runOnce, 1)
        const [attempt] = yield* deliveries.attempts(key.id, endpoint.id)
        assert.strictEqual(attempt!.outcome, "failed")
        assert.isNull(attempt!.statusCode)
        assert.include(attempt!.error, "rebinding.example resolves to 127.0.0.1")
        assert.strictEqual(target.received.length, 0)
      }))

    it.effect("literal loopback, private, link-local and metadata addresses are refused at registration", () =>
      Effect.gen(function*() {
        const desk = yield* WebhookDesk
        const key = yield* customer("literals")
        for (
          const url of [
            "http://127.0.0.1/x",
            "http://10.1.2.3/x",
            "http://[fe80::1]/x",
            "http://169.254.169.254/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://192.168.1.1/x",
            "http://localhost/x"
          ]
        ) {
          const refused = yield* Effect.flip(desk.create(key, { url }))
          assert.strictEqual((refused as { code?: string }).code, "invalid_request", url)
        }
      }))
  })
})
