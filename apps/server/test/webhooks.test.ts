import { type Event, makePetstoreClient, MAX_WEBHOOK_ENDPOINTS, verifyWebhook } from "@petstore/contract"
import {
  ADMIN_TOKEN,
  eventually,
  createKey,
  type ReceivedWebhook,
  startWebhookReceiver,
  type WebhookReceiver
} from "@petstore/test-support"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, suiteOptions } from "./support/databases.ts"
import { waitFor } from "./support/waitFor.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

const clientOf =
  (server: RunningServer, apiKey: string) =>
  <A, E>(use: (client: Effect.Success<ReturnType<typeof makePetstoreClient>>) => Effect.Effect<A, E>) =>
    makePetstoreClient({ baseUrl: server.baseUrl, apiKey }).pipe(
      Effect.flatMap(use),
      Effect.provide(FetchHttpClient.layer),
      Effect.runPromise
    )

const eventOf = (webhook: ReceivedWebhook) => JSON.parse(webhook.body) as Event

for (const backend of backends) {
  describe(`webhooks on ${backend.name}`, suiteOptions(backend.name), () => {
    let server: RunningServer
    let receiver: WebhookReceiver

    beforeAll(async () => {
      receiver = await startWebhookReceiver()
      server = await startServer(backend.name, { webhookAllowHttp: true, webhookAllowPrivateAddresses: true })
    })
    afterAll(async () => {
      await server?.stop()
      await receiver?.close()
    })

    it("end to end: an endpoint registered through the typed client receives the signed order events, verifiable with the reference library", async () => {
      const customer = await server.createKey("pro")
      const api = clientOf(server, customer.key)
      const endpoint = await api((client) =>
        client.createWebhookEndpoint({
          url: receiver.url,
          eventTypes: ["order.placed", "order.cancelled"],
          description: "e2e"
        })
      )
      expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
      expect(endpoint).toMatchObject({
        url: receiver.url,
        enabled: true,
        eventTypes: ["order.placed", "order.cancelled"]
      })
      // The secret is shown once: reading the endpoint again does not show it.
      expect(JSON.stringify(await api((client) => client.getWebhookEndpoint(endpoint.id)))).not.toContain(
        endpoint.secret
      )

      const pet = await api((client) => client.createPet({ name: "Webhooked", categoryId: 1 }))
      const order = await api((client) => client.placeOrder({ petId: pet.id }))
      await api((client) => client.cancelOrder(order.id))

      const orderWebhooks = await waitFor(() => {
        const mine = receiver.received.filter((webhook) => (eventOf(webhook).data as { id?: number }).id === order.id)
        return mine.length >= 2 && mine
      }, "order.placed and order.cancelled")
      expect(orderWebhooks.map((webhook) => eventOf(webhook).type)).toEqual(["order.placed", "order.cancelled"])
      // No pet events: the endpoint asked for order events only.
      expect(receiver.received.some((webhook) => eventOf(webhook).type.startsWith("pet."))).toBe(false)

      const reference = new Webhook(endpoint.secret)
      for (const webhook of orderWebhooks) {
        const headers = webhook.headers as Record<string, string>
        expect(headers["webhook-id"]).toBe(eventOf(webhook).id)
        expect(reference.verify(webhook.body, headers)).toEqual(JSON.parse(webhook.body))
        const verified = await Effect.runPromise(verifyWebhook(endpoint.secret, headers, webhook.body))
        expect(verified.id).toBe(headers["webhook-id"])
      }
      expect(eventOf(orderWebhooks[0]!).data).toEqual(order)

      // The same events are in the caller's log. The log shows an event once every transaction older than it has
      // ended on the whole PostgreSQL server (its snapshot's xmin), so another suite's open transaction on a shared
      // server holds it back a while: the test waits for it, boundedly.
      const placed = eventOf(orderWebhooks[0]!).id
      const logged = await eventually(
        async () =>
          (await api((client) => client.listEvents({ type: "order.placed" }))).events.some((e) => e.id === placed),
        180_000,
        250
      )
      expect(logged, `${placed} in the log`).toBe(true)

      const attempts = await api((client) => client.listWebhookAttempts(endpoint.id))
      expect(attempts.filter((attempt) => attempt.outcome === "succeeded").length).toBeGreaterThanOrEqual(2)

      // The operator sees the key's endpoints (never the secret), and the deliveries in the metrics.
      const adminView = await fetch(`${server.adminUrl}/admin/keys/${customer.id}/webhook-endpoints`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
      })
      const adminText = await adminView.text()
      expect(adminView.status, adminText).toBe(200)
      expect(JSON.parse(adminText)).toMatchObject([{ id: endpoint.id, url: receiver.url, enabled: true }])
      expect(adminText).not.toContain(endpoint.secret)
      const metrics =
        await (await fetch(`${server.adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
          .text()
      expect(metrics).toMatch(/webhook_deliveries_total\{[^}]*outcome="succeeded"[^}]*\} [1-9]/)
      expect(metrics).toMatch(/webhook_delivery_lag_seconds_count(\{[^}]*\})? [1-9]/)
    })

    it("answers each refusal with its error: another key's endpoint 404 on every operation, an event not the key's 404, an endpoint beyond the bound 400", async () => {
      const [owner, other] = [await server.createKey("pro"), await server.createKey("pro")]
      const call = async (key: string, method: string, path: string, body?: unknown) => {
        const response = await fetch(`${server.baseUrl}/webhooks/endpoints${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        // Each answer's own request id aside, the body is compared whole.
        const { requestId: _, ...answer } = await response.json() as Record<string, unknown>
        return { status: response.status, body: answer }
      }
      const created = await call(owner.key, "POST", "", { url: receiver.url })
      expect(created.status).toBe(201)
      const { id } = created.body as { readonly id: string }
      const { eventId } = (await call(owner.key, "POST", `/${id}/test`)).body as { readonly eventId: string }
      const missing = { code: "not_found", message: `No webhook endpoint has id ${id}`, status: 404 }
      for (
        const [method, path, body] of [
          ["GET", `/${id}`],
          ["PATCH", `/${id}`, { description: "not mine" }],
          ["DELETE", `/${id}`],
          ["POST", `/${id}/rotate-secret`],
          ["POST", `/${id}/test`],
          ["GET", `/${id}/attempts`],
          ["POST", `/${id}/redeliver`, { eventId }]
        ] as const
      ) {
        expect(await call(other.key, method, path, body), `${method} ${path}`).toEqual({ status: 404, body: missing })
      }
      const mine = (await call(other.key, "POST", "", { url: receiver.url })).body as { readonly id: string }
      expect(await call(other.key, "POST", `/${mine.id}/redeliver`, { eventId })).toEqual({
        status: 404,
        body: {
          code: "not_found",
          message: `No event ${eventId} is yours to redeliver (events are kept 30 days)`,
          status: 404
        }
      })
      for (let made = 1; made < MAX_WEBHOOK_ENDPOINTS; made++) {
        expect((await call(other.key, "POST", "", { url: receiver.url })).status).toBe(201)
      }
      expect(await call(other.key, "POST", "", { url: receiver.url })).toEqual({
        status: 400,
        body: {
          code: "invalid_request",
          message: `A key may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one first`,
          status: 400
        }
      })
    })

    it("test events, redeliveries with the same webhook-id, and both signatures while a rotated secret overlaps", async () => {
      const staff = await createKey(server.adminUrl, "pro", undefined, ADMIN_TOKEN, "staff")
      const api = clientOf(server, staff.key)
      const endpoint = await api((client) =>
        client.createWebhookEndpoint({ url: `${receiver.url}?rotation`, eventTypes: ["webhook.test"] })
      )
      const { eventId } = await api((client) => client.testWebhookEndpoint(endpoint.id))
      const first = await waitFor(
        () => receiver.received.find((webhook) => webhook.headers["webhook-id"] === eventId),
        "the test event"
      )
      expect(eventOf(first)).toMatchObject({ type: "webhook.test", data: { endpointId: endpoint.id } })

      const rotated = await api((client) => client.rotateWebhookSecret(endpoint.id))
      expect(rotated.secret).not.toBe(endpoint.secret)
      await api((client) => client.redeliverWebhookEvent(endpoint.id, eventId))
      const again = await waitFor(() => {
        const copies = receiver.received.filter((webhook) => webhook.headers["webhook-id"] === eventId)
        return copies.length >= 2 && copies[1]
      }, "the redelivery")
      expect(String(again.headers["webhook-signature"]).split(" ")).toHaveLength(2)
      const headers = again.headers as Record<string, string>
      expect(new Webhook(rotated.secret).verify(again.body, headers)).toBeTruthy()
      expect(new Webhook(endpoint.secret).verify(again.body, headers)).toBeTruthy()
    })

    it("410 Gone disables the endpoint; a redirect is a failure and is not followed", async () => {
      const customer = await server.createKey("pro")
      const api = clientOf(server, customer.key)
      const gone = await api((client) =>
        client.createWebhookEndpoint({ url: `${receiver.url}?gone`, eventTypes: ["webhook.test"] })
      )
      const moved = await api((client) =>
        client.createWebhookEndpoint({ url: `${receiver.url}?moved`, eventTypes: ["webhook.test"] })
      )
      receiver.answerWith((request, response) => {
        if (request.path.endsWith("?gone")) return response.writeHead(410).end()
        if (request.path.endsWith("?moved")) {
          return response.writeHead(301, { location: `${receiver.url}?followed` }).end()
        }
        if (request.path.endsWith("?followed")) throw new Error("a redirect was followed")
        response.writeHead(200).end("ok")
      })
      await api((client) => client.testWebhookEndpoint(gone.id))
      await api((client) => client.testWebhookEndpoint(moved.id))
      await waitFor(
        () => receiver.received.some((webhook) => webhook.path.endsWith("?moved")),
        "the redirected attempt"
      )
      const goneNow = await pollUntil(
        () => api((client) => client.getWebhookEndpoint(gone.id)),
        (endpoint) => !endpoint.enabled
      )
      expect(goneNow.disabledReason).toContain("410")
      const movedAttempts = await pollUntil(
        () => api((client) => client.listWebhookAttempts(moved.id)),
        (attempts) => attempts.length > 0
      )
      expect(movedAttempts[0]).toMatchObject({ outcome: "failed", statusCode: 301, error: "redirect 301 not followed" })
      expect(movedAttempts[0]!.nextAttemptAt).not.toBeNull()
      expect(receiver.received.some((webhook) => webhook.path.endsWith("?followed"))).toBe(false)
      receiver.answerWith((_request, response) => response.writeHead(200).end("ok"))
    })

    it("refuses URLs that are not https, and a key's endpoints are bounded and its own", async () => {
      const strict = await startServer(backend.name, {})
      try {
        const customer = await strict.createKey("pro")
        const api = clientOf(strict, customer.key)
        for (
          const url of [
            "http://example.com/hook",
            "https://127.0.0.1/hook",
            "https://[::1]/hook",
            "https://169.254.169.254/latest",
            "https://localhost/x"
          ]
        ) {
          const refused = await api((client) => Effect.flip(client.createWebhookEndpoint({ url })))
          expect(refused).toHaveProperty("code", "invalid_request")
        }
        // Fifteen at once: exactly ten are created, whatever the interleaving.
        const outcomes = await Promise.allSettled(
          Array.from(
            { length: 15 },
            (_, i) => api((client) => client.createWebhookEndpoint({ url: `https://example.com/hook/${i}` }))
          )
        )
        expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(10)
        const eleventh = await api((client) =>
          Effect.flip(client.createWebhookEndpoint({ url: "https://example.com/hook/10" }))
        )
        expect(eleventh).toHaveProperty("code", "invalid_request")
        const mine = await api((client) => client.listWebhookEndpoints())
        expect(mine).toHaveLength(10)
        const other = await strict.createKey("pro")
        const notTheirs = await clientOf(strict, other.key)((client) =>
          Effect.flip(client.getWebhookEndpoint(mine[0]!.id))
        )
        expect(notTheirs).toHaveProperty("code", "not_found")
      } finally {
        await strict.stop()
      }
    })
  })
}

const pollUntil = async <A>(read: () => Promise<A>, done: (a: A) => boolean): Promise<A> => {
  const deadline = Date.now() + 60_000
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
