import { signWebhook } from "@petstore/contract"
import { Effect, Exit } from "effect"
import { type Check, type Phase, skipped } from "./checks.ts"
import { GENERAL_PHASE, keyHint, type RunContext } from "./context.ts"
import { EVENTS_PHASE, eventsOf } from "./events.ts"
import { decodeBody, expectStatus } from "./expect.ts"
import { nextLink } from "./general.ts"
import { type Credential, describeResponse, type Exchange, Http, withKey } from "./http.ts"
import { CheckFailed, type CheckSkipped } from "./model.ts"
import { SpecPet } from "./specSchemas.ts"
import { STORE_PHASE } from "./store.ts"
import { type Delivery, parseListen, type Receiver, startReceiver } from "./webhookReceiver.ts"

/**
 * `--webhooks`: a receiver of this run registered as a webhook endpoint (an extension: the spec has no
 * events), events caused through the API, and what arrives checked as the README's "Events and webhooks"
 * and the Standard Webhooks specification say. It deletes the endpoint it registered, passing or not.
 */

export const WEBHOOKS_PHASE = "webhooks"

export interface WebhookOptions {
  /** Where the receiver listens, `host:port`. Default `127.0.0.1:0` (a free port). */
  readonly listen?: string | undefined
  /** The URL at which the deployment reaches the receiver, when not its listening address (a tunnel, a proxy). */
  readonly publicUrl?: string | undefined
}

/** The longest a check waits for a delivery or a change it causes: only to catch a hang, never a timing assert. */
const HANG_GUARD_MILLIS = 60_000
const POLL_MILLIS = 100
const MAX_EVENT_PAGES = 200
/** Standard Webhooks: a receiver refuses a timestamp further than this from its clock. */
const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60

const POLICY_HINT = "a deployment refuses http:// URLs and loopback or private addresses unless its operator allows " +
  "them (this implementation: WEBHOOK_ALLOW_HTTP=true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true); otherwise give " +
  "--webhook-public-url, an https URL on a public address that forwards to --webhook-listen"

const isType = (type: string) => (delivery: Delivery) =>
  (delivery.json as { type?: unknown } | undefined)?.type === type
const dataOf = (delivery: Delivery) => (delivery.json as { data?: Record<string, unknown> } | undefined)?.data

export const webhooksPhase = (
  run: RunContext,
  options: WebhookOptions | undefined,
  document: {
    readonly paths?: ReadonlyArray<string> | undefined
    readonly webhookPayload?: ((type: string, body: unknown) => string | undefined | "undescribed") | undefined
  }
) =>
  Effect.gen(function*() {
    const key = run.generalKey
    const listen = parseListen(options?.listen ?? "127.0.0.1:0")
    const hasEndpoints = document.paths?.some((path) =>
      path === "/webhooks/endpoints" || path.endsWith("/v1/webhooks/endpoints")
    ) ?? false
    const unavailable: CheckSkipped | undefined = options === undefined
      ? skipped("webhooks are checked with --webhooks (a receiver the deployment can reach: see --webhook-listen)")
      : listen === undefined
      ? skipped(`--webhook-listen takes host:port, such as 0.0.0.0:8099, not "${options.listen}"`)
      : document.paths === undefined
      ? skipped(
        "no OpenAPI document of the deployment: the webhooks checks run only when it describes /webhooks/endpoints"
      )
      : !hasEndpoints
      ? skipped("the deployment's OpenAPI document has no /webhooks/endpoints: the spec shows no webhooks")
      : key === undefined
      ? skipped(`no API key given: ${keyHint("business")} (any plan will do)`)
      : undefined
    const credential: Credential | undefined = key === undefined ? undefined : withKey(key)
    const send = (method: string, path: string, json?: unknown) =>
      Http.use((http) => http.send({ method, path, credential: credential!, ...(json === undefined ? {} : { json }) }))

    let receiver: Receiver | undefined
    let endpoint: { readonly id: string; readonly secret: string } | undefined
    let deleted = false

    /** Waits until the receiver holds deliveries that satisfy `enough`; after the hang guard, fails saying what came. */
    const awaitDeliveries = <A>(what: string, enough: (deliveries: ReadonlyArray<Delivery>) => A | undefined) =>
      Effect.gen(function*() {
        const deadline = Date.now() + HANG_GUARD_MILLIS
        while (true) {
          const found = enough(receiver!.deliveries())
          if (found !== undefined) return found
          if (Date.now() > deadline) {
            return yield* new CheckFailed({
              request: `deliveries to ${receiver!.url}`,
              expected: `within ${HANG_GUARD_MILLIS / 1000} s, ${what}`,
              received: `${receiver!.deliveries().length} deliveries of other events, or none`
            })
          }
          yield* Effect.sleep(POLL_MILLIS)
        }
      })

    /** A pet created with a name the receiver can recognise before the pet's id is known. */
    const createPet = (name: string) =>
      Effect.gen(function*() {
        const exchange = yield* send("POST", "/pets", { name, categoryId: 29 })
        yield* expectStatus(exchange, 201)
        return yield* decodeBody(SpecPet, exchange, "a Pet")
      })
    const ofPet = (name: string) => (delivery: Delivery) =>
      isType("pet.created")(delivery) && delivery.body.includes(JSON.stringify(name))
    /** How the receiver recognises a delivery of that pet's creation as it arrives, to answer it. */
    const petBody = (name: string) => (body: string) =>
      body.includes("\"pet.created\"") && body.includes(JSON.stringify(name))

    // The events the checks look at: a pet created (whose first delivery is answered 500), an order of it placed and cancelled.
    const firstName = run.petName()
    let caused: Exit.Exit<{ readonly petId: number; readonly orderId: number }, CheckFailed> | undefined
    const cause = Effect.gen(function*() {
      if (caused === undefined) {
        receiver!.answer(petBody(firstName), 500, 1)
        caused = yield* Effect.exit(Effect.gen(function*() {
          const pet = yield* createPet(firstName)
          const placed = yield* send("POST", "/store/orders", { petId: pet.id })
          yield* expectStatus(placed, 201)
          const orderId = (placed.json as { readonly id?: unknown }).id
          if (typeof orderId !== "number") {
            return yield* new CheckFailed({
              request: `POST ${run.baseUrl}/store/orders`,
              expected: "an Order with an id",
              received: describeResponse(placed)
            })
          }
          yield* expectStatus(yield* send("POST", `/store/orders/${orderId}/cancel`), 200)
          return { petId: pet.id, orderId }
        }))
      }
      return yield* caused
    })
    const ofOrder = (type: string, orderId: number) => (delivery: Delivery) =>
      isType(type)(delivery) && dataOf(delivery)?.id === orderId
    /** One delivery of each event caused, the first of each that the receiver answered 2xx. */
    const theDeliveries = Effect.gen(function*() {
      const { orderId } = yield* cause
      const wanted = [
        ["pet.created", ofPet(firstName)],
        ["order.placed", ofOrder("order.placed", orderId)],
        ["order.cancelled", ofOrder("order.cancelled", orderId)]
      ] as const
      return yield* awaitDeliveries(
        `a delivery of each of ${wanted.map(([type]) => type).join(", ")} (the pet ${firstName}, order ${orderId})`,
        (deliveries) => {
          const found = wanted.map(([, matches]) =>
            deliveries.find((delivery) => matches(delivery) && delivery.answered < 300)
          )
          return found.every((delivery) => delivery !== undefined) ? found as ReadonlyArray<Delivery> : undefined
        }
      )
    })
    const failedDelivery = (delivery: Delivery, expected: string, received: string) =>
      new CheckFailed({ request: `a delivery to ${receiver!.url}: ${delivery.body.slice(0, 300)}`, expected, received })

    /** Every event of the list, following `rel="next"`, until `found` holds of the events seen or the hang guard. */
    const awaitListed = (what: string, found: (events: ReadonlyArray<Record<string, unknown>>) => boolean) =>
      Effect.gen(function*() {
        const deadline = Date.now() + HANG_GUARD_MILLIS
        while (true) {
          const seen: Array<Record<string, unknown>> = []
          let path: string | undefined = "/events?limit=100"
          let last: Exchange | undefined
          for (let pages = 0; path !== undefined && pages < MAX_EVENT_PAGES; pages++) {
            last = yield* send("GET", path)
            yield* expectStatus(last, 200)
            const page: Array<Record<string, unknown>> = (eventsOf(last.json) ?? []).map((text) => JSON.parse(text))
            seen.push(...page)
            // An empty page is the end of the log: a service may link from it to itself, to read on later.
            path = page.length === 0 ? undefined : nextLink(last)
          }
          if (found(seen)) return
          if (Date.now() > deadline) {
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/events?limit=100 and its next pages`,
              expected: `within ${HANG_GUARD_MILLIS / 1000} s, ${what}`,
              received: `${seen.length} events without it; the last page: ${describeResponse(last!)}`
            })
          }
          yield* Effect.sleep(500)
        }
      })

    const check = (id: string, title: string, body: Check["run"]): Check => ({
      id,
      area: "webhooks",
      tag: "extension",
      title,
      ...(id === "webhooks.register" ? {} : { requires: ["webhooks.register"] }),
      run: unavailable === undefined ? body : Effect.fail(unavailable)
    })

    const phase: Phase = {
      name: WEBHOOKS_PHASE,
      after: [GENERAL_PHASE, STORE_PHASE, EVENTS_PHASE],
      checks: [
        check(
          "webhooks.register",
          "POST /webhooks/endpoints registers the run's receiver: 201 with an id and a whsec_ secret",
          Effect.gen(function*() {
            receiver = yield* Effect.tryPromise({
              try: () => startReceiver(listen!, options?.publicUrl, run.runId),
              catch: (error) =>
                new CheckFailed({
                  expected: `a receiver listening on ${options?.listen ?? "127.0.0.1:0"}`,
                  received: `cannot listen there: ${error instanceof Error ? error.message : String(error)}`
                })
            })
            const exchange = yield* send("POST", "/webhooks/endpoints", {
              url: receiver.url,
              eventTypes: ["pet.created", "order.placed", "order.cancelled"],
              description: `petstore-conformance run ${run.runId}`
            })
            if (exchange.status === 400) {
              return yield* new CheckFailed({
                request: `POST ${run.baseUrl}/webhooks/endpoints with the url ${receiver.url}`,
                expected: "201: the receiver registered",
                received: `${describeResponse(exchange)}. If that is the deployment's URL policy: ${POLICY_HINT}`
              })
            }
            yield* expectStatus(exchange, 201)
            const created = exchange.json as { readonly id?: unknown; readonly secret?: unknown }
            if (
              typeof created.id !== "string" || typeof created.secret !== "string" ||
              !/^whsec_[A-Za-z0-9+/=]+$/.test(created.secret)
            ) {
              // Not the body: it may hold the secret.
              return yield* new CheckFailed({
                request: `POST ${run.baseUrl}/webhooks/endpoints`,
                expected: "an endpoint with an id and its signing secret whsec_…",
                received: `fields ${Object.keys(created ?? {}).join(", ")}`
              })
            }
            run.hideSecret?.(created.secret)
            endpoint = { id: created.id, secret: created.secret }
          })
        ),
        check(
          "webhooks.headers",
          "deliveries carry webhook-id, webhook-timestamp (Unix seconds, near now) and webhook-signature (v1,…), as JSON",
          Effect.gen(function*() {
            for (const delivery of yield* theDeliveries) {
              const { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature } =
                delivery.headers
              const shown = `webhook-id: ${id ?? "(none)"}, webhook-timestamp: ${
                timestamp ?? "(none)"
              }, webhook-signature: ${
                signature === undefined ? "(none)" : signature.slice(0, 12) + "…"
              }, content-type: ${delivery.headers["content-type"] ?? "(none)"}`
              const ok = id !== undefined && /^[\x21-\x7e]{1,256}$/.test(id) &&
                timestamp !== undefined && /^\d{1,12}$/.test(timestamp) &&
                Math.abs(Date.now() / 1000 - Number(timestamp)) <= TIMESTAMP_TOLERANCE_SECONDS &&
                signature !== undefined && signature.split(" ").some((part) => /^v1,[A-Za-z0-9+/]+=*$/.test(part)) &&
                /^application\/json\s*(;|$)/i.test(delivery.headers["content-type"] ?? "")
              if (!ok) {
                return yield* failedDelivery(
                  delivery,
                  "the three Standard Webhooks headers, the timestamp within 5 minutes of now, and Content-Type: application/json",
                  shown
                )
              }
            }
          })
        ),
        check(
          "webhooks.signature",
          "each delivery's webhook-signature is the v1 HMAC-SHA256 of id.timestamp.body with the endpoint's secret",
          Effect.gen(function*() {
            for (const delivery of yield* theDeliveries) {
              const {
                "webhook-id": id = "",
                "webhook-timestamp": timestamp = "",
                "webhook-signature": signatures = ""
              } = delivery.headers
              const expected = signWebhook(endpoint!.secret, id, Number(timestamp), delivery.body)
              if (!signatures.split(" ").includes(expected)) {
                return yield* failedDelivery(
                  delivery,
                  "a v1 signature, with the secret the registration gave, of webhook-id.webhook-timestamp.body",
                  `webhook-signature: ${
                    signatures.split(" ").map((part) => part.slice(0, 12) + "…").join(" ") || "(none)"
                  }`
                )
              }
            }
          })
        ),
        check(
          "webhooks.payloads",
          "each delivery's body is valid against the document's webhooks, its event's id is webhook-id, and data is the object changed",
          Effect.gen(function*() {
            const { petId, orderId } = yield* cause
            const deliveries = yield* theDeliveries
            for (
              const [delivery, type, id, status] of [
                [deliveries[0]!, "pet.created", petId, "available"],
                [deliveries[1]!, "order.placed", orderId, "placed"],
                [deliveries[2]!, "order.cancelled", orderId, "cancelled"]
              ] as const
            ) {
              const problem = document.webhookPayload === undefined
                ? "undescribed"
                : document.webhookPayload(type, delivery.json)
              if (problem === "undescribed") {
                return yield* failedDelivery(delivery, `the document's webhooks to describe ${type}`, "it does not")
              }
              if (problem !== undefined) {
                return yield* failedDelivery(delivery, `a ${type} body as the document's webhooks say`, problem)
              }
              const event = delivery.json as { readonly id?: unknown }
              if (event.id !== delivery.headers["webhook-id"]) {
                return yield* failedDelivery(
                  delivery,
                  "the event's id as webhook-id",
                  `webhook-id: ${delivery.headers["webhook-id"]}, id: ${JSON.stringify(event.id)}`
                )
              }
              const data = dataOf(delivery)
              if (data?.id !== id || data?.status !== status) {
                return yield* failedDelivery(
                  delivery,
                  `data: the ${type.split(".")[0]} ${id} with status ${status}`,
                  `data: ${JSON.stringify(data)}`
                )
              }
            }
          })
        ),
        check(
          "webhooks.retry-same-id",
          "a delivery answered 500 is retried with the same webhook-id",
          Effect.gen(function*() {
            yield* cause
            const attempts = yield* awaitDeliveries(
              `a retry of the delivery of the pet ${firstName}, which the receiver answered 500`,
              (deliveries) => {
                const ofThePet = deliveries.filter(ofPet(firstName))
                return ofThePet.length >= 2 ? ofThePet : undefined
              }
            )
            const ids = attempts.map((delivery) => delivery.headers["webhook-id"])
            if (new Set(ids).size !== 1) {
              return yield* failedDelivery(
                attempts[1]!,
                "the same webhook-id on every attempt of one event",
                `webhook-ids ${ids.join(", ")}`
              )
            }
          })
        ),
        check(
          "webhooks.gone-disables",
          "a delivery answered 410 Gone disables the endpoint (enabled: false)",
          Effect.gen(function*() {
            const name = run.petName()
            receiver!.answer(petBody(name), 410)
            yield* createPet(name)
            yield* awaitDeliveries(
              `a delivery of the pet ${name}, which the receiver answers 410`,
              (deliveries) => deliveries.find(ofPet(name))
            )
            const deadline = Date.now() + HANG_GUARD_MILLIS
            while (true) {
              const exchange = yield* send("GET", `/webhooks/endpoints/${endpoint!.id}`)
              yield* expectStatus(exchange, 200)
              if ((exchange.json as { enabled?: unknown }).enabled === false) return
              if (Date.now() > deadline) {
                return yield* new CheckFailed({
                  request: `GET ${run.baseUrl}/webhooks/endpoints/${endpoint!.id}`,
                  expected: `within ${HANG_GUARD_MILLIS / 1000} s of the 410, enabled: false`,
                  received: describeResponse(exchange)
                })
              }
              yield* Effect.sleep(500)
            }
          })
        ),
        check(
          "webhooks.events-catch-up",
          "GET /events lists every delivered event by its webhook-id, and the events missed while disabled",
          Effect.gen(function*() {
            const delivered = (yield* theDeliveries).map((delivery) => delivery.headers["webhook-id"])
            // Created after webhooks.gone-disables, whose endpoint no longer receives it: the list must have it.
            const name = run.petName()
            yield* createPet(name)
            yield* awaitListed(
              `the events delivered (${delivered.join(", ")}) and the pet.created of ${name}`,
              (events) =>
                delivered.every((id) => events.some((event) => event.id === id)) &&
                events.some((event) =>
                  event.type === "pet.created" && (event.data as { name?: unknown } | undefined)?.name === name
                )
            )
          })
        ),
        check(
          "webhooks.delete",
          "DELETE /webhooks/endpoints/{id}: 204, then the endpoint is 404",
          Effect.gen(function*() {
            yield* expectStatus(yield* send("DELETE", `/webhooks/endpoints/${endpoint!.id}`), 204)
            deleted = true
            yield* expectStatus(yield* send("GET", `/webhooks/endpoints/${endpoint!.id}`), 404)
          })
        )
      ]
    }

    /** After the run: the endpoint deleted (when a check did not), the receiver closed. */
    const release = Effect.gen(function*() {
      if (endpoint !== undefined && !deleted) yield* Effect.ignore(send("DELETE", `/webhooks/endpoints/${endpoint.id}`))
      if (receiver !== undefined) yield* Effect.promise(() => receiver!.close())
    })
    return { phase, release }
  })
