import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { Webhook } from "standardwebhooks"
import { OpenApi } from "effect/http-api"
import { PetstoreApi, signWebhook, verifyWebhook, WEBHOOK_TOLERANCE_SECONDS } from "../src/index.ts"

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
const event = {
  id: "evt_2f6c0e1b9a8d4c7e8f1a2b3c4d5e6f70",
  type: "pet.created",
  timestamp: "2026-11-25T09:30:00.000Z",
  data: { id: 1, name: "Rex", categoryId: 1, status: "available" }
}
const body = JSON.stringify(event)
/** Today, to the second: the reference implementation checks timestamps against the real clock. */
const now = Math.floor(Date.now() / 1000) * 1000

describe("verifyWebhook, against the Standard Webhooks reference implementation (standardwebhooks on npm)", () => {
  it("signs exactly as the reference does", () => {
    const reference = new Webhook(secret)
    const timestamp = new Date(now)
    assert.strictEqual(signWebhook(secret, event.id, now / 1000, body), reference.sign(event.id, timestamp, body))
  })

  it.effect("accepts what the reference signed, within 5 minutes, and returns the decoded event", () =>
    Effect.gen(function*() {
      // The reference reads the real clock, so the delivery is signed now; ours reads the TestClock, set to
      // the last second of the tolerance after it.
      const signedAt = Math.floor(Date.now() / 1000) * 1000
      yield* TestClock.setTime(signedAt + 299_000)
      const headers = {
        "webhook-id": event.id,
        "webhook-timestamp": String(signedAt / 1000),
        "webhook-signature": new Webhook(secret).sign(event.id, new Date(signedAt), body)
      }
      const verified = yield* verifyWebhook(secret, headers, body)
      assert.deepStrictEqual(verified, event as never)
      // The reference accepts the same delivery.
      assert.deepStrictEqual(new Webhook(secret).verify(body, headers), event)
    }))

  it.effect("refuses a tampered body, another secret, a stale or future timestamp, and a missing header", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(now)
      const signature = signWebhook(secret, event.id, now / 1000, body)
      const headers = {
        "webhook-id": event.id,
        "webhook-timestamp": String(now / 1000),
        "webhook-signature": signature
      }
      const refused = (secretUsed: string, h: Record<string, string>, b: string) =>
        Effect.map(Effect.exit(verifyWebhook(secretUsed, h, b)), Exit.isFailure)
      assert.isTrue(yield* refused(secret, headers, body.replace("Rex", "Max")))
      assert.isTrue(yield* refused("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", headers, body))
      assert.isTrue(yield* refused(secret, { ...headers, "webhook-id": "evt_00000000000000000000000000000000" }, body))
      const { ["webhook-signature"]: _, ...unsigned } = headers
      assert.isTrue(yield* refused(secret, unsigned, body))
      // One signature of several is enough (a rotation's overlap); none that matches is not.
      assert.isFalse(yield* refused(secret, { ...headers, "webhook-signature": `v1,bm9wZQ== ${signature}` }, body))
      yield* TestClock.setTime(now + (WEBHOOK_TOLERANCE_SECONDS + 1) * 1000)
      assert.isTrue(yield* refused(secret, headers, body))
      yield* TestClock.setTime(now - (WEBHOOK_TOLERANCE_SECONDS + 1) * 1000)
      assert.isTrue(yield* refused(secret, headers, body))
    }))
})

describe("the OpenAPI document's webhooks", () => {
  it("has a top-level webhooks entry per event type, each a signed POST of its event schema", () => {
    const spec = OpenApi.fromApi(PetstoreApi) as unknown as {
      webhooks: Record<string, any>
      components: { schemas: Record<string, unknown> }
    }
    assert.sameMembers(Object.keys(spec.webhooks), [
      "pet.created",
      "pet.updated",
      "pet.deleted",
      "order.placed",
      "order.cancelled",
      "order.delivered",
      "webhook.test"
    ])
    const placed = spec.webhooks["order.placed"].post
    assert.deepStrictEqual(placed.requestBody.content["application/json"].schema, {
      $ref: "#/components/schemas/OrderEvent"
    })
    assert.sameMembers(placed.parameters.map((p: { name: string }) => p.name), [
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature"
    ])
    for (const schema of ["PetEvent", "OrderEvent", "WebhookTestEvent"]) {
      assert.property(spec.components.schemas, schema)
    }
  })
})
