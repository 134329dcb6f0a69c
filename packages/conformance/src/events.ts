import { Effect } from "effect"
import { type Check, type Phase, skipped } from "./checks.ts"
import { GENERAL_PHASE, keyHint, type RunContext } from "./context.ts"
import { decodeBody, ensure, expectError, expectStatus } from "./expect.ts"
import { anonymous, type Credential, describeResponse, type Exchange, Http, withKey } from "./http.ts"
import { CheckFailed, type CheckSkipped } from "./model.ts"
import { SpecPet } from "./specSchemas.ts"
import { STORE_PHASE } from "./store.ts"
import { nextLink } from "./general.ts"

/**
 * Checks of the events list (`GET /events`), an extension: the spec shows no events (§6). They run only
 * when the deployment's OpenAPI document has the path, and are skipped with the reason otherwise. They
 * assume no event shape beyond what any list of the changes must hold: an event of a pet's creation, and of
 * an order's placing and cancelling, carries the object after the change. The document's own schema for the
 * list is held by `openapi.responses`, as for every answer.
 */

export const EVENTS_PHASE = "events"

/** How long the list may take to catch up with a change: events may be written after the answer. */
const CATCH_UP_MILLIS = 10_000
const POLL_MILLIS = 250
/** Pages followed through `Link: rel="next"` looking for an event; the list may start with older ones. */
const MAX_PAGES = 50

/** The JSON texts of the events in a page: a bare array, or the first array property of an envelope. */
export const eventsOf = (json: unknown): ReadonlyArray<string> | undefined => {
  const list = Array.isArray(json)
    ? json
    : typeof json === "object" && json !== null
    ? Object.values(json).find(Array.isArray)
    : undefined
  return list?.map((event) => JSON.stringify(event))
}

export const eventsPhase = (run: RunContext, documentPaths: ReadonlyArray<string> | undefined): Effect.Effect<Phase> =>
  Effect.gen(function*() {
    const key = run.generalKey
    const hasEvents = documentPaths?.some((path) => path === "/events" || path.endsWith("/v1/events")) ?? false
    const unavailable: CheckSkipped | undefined = documentPaths === undefined
      ? skipped("no OpenAPI document of the deployment: the events checks run only when it describes GET /events")
      : !hasEvents
      ? skipped("the deployment's OpenAPI document has no /events: the spec shows no events (§6)")
      : key === undefined
      ? skipped(`no API key given: ${keyHint("business")} (any plan will do)`)
      : undefined
    const keyed: Effect.Effect<Credential, CheckSkipped> = unavailable !== undefined
      ? Effect.fail(unavailable)
      : Effect.succeed(withKey(key!))
    const send = (method: string, path: string, json?: unknown) =>
      Effect.flatMap(
        keyed,
        (credential) =>
          Http.use((http) => http.send({ method, path, credential, ...(json === undefined ? {} : { json }) }))
      )

    /**
     * Every event's JSON text, following `rel="next"` from the first page, until one satisfies `found` or
     * the list has not caught up within the time allowed.
     */
    const awaitEvent = (what: string, found: (event: string) => boolean) =>
      Effect.gen(function*() {
        const deadline = Date.now() + CATCH_UP_MILLIS
        let last: Exchange | undefined
        let pages = 0
        while (true) {
          let path: string | undefined = "/events"
          for (pages = 0; path !== undefined && pages < MAX_PAGES; pages++) {
            const exchange: Exchange = yield* send("GET", path)
            last = exchange
            yield* expectStatus(exchange, 200)
            const events = eventsOf(exchange.json)
            yield* ensure(events !== undefined, exchange, "a JSON array of events, or an object holding one")
            if (events!.some(found)) return
            // An empty page is the end of the log: a service may link from it to itself, to read on later.
            path = events!.length === 0 ? undefined : nextLink(exchange)
          }
          if (Date.now() > deadline) {
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/events and its next pages`,
              expected: `within ${CATCH_UP_MILLIS / 1000} s, ${what}`,
              received:
                `no such event in ${pages} page${pages === 1 ? "" : "s"}${
                  pages === MAX_PAGES ? " (the most it reads)" : ""
                }; ` +
                `the last page: ${describeResponse(last!)}`
            })
          }
          yield* Effect.sleep(POLL_MILLIS)
        }
      })

    const newPet = Effect.gen(function*() {
      const exchange = yield* send("POST", "/pets", { name: run.petName(), categoryId: 29 })
      yield* expectStatus(exchange, 201)
      return yield* decodeBody(SpecPet, exchange, "a Pet")
    })

    const check = (id: string, title: string, body: Check["run"]): Check => ({
      id,
      area: "events",
      tag: "extension",
      title,
      run: unavailable === undefined ? body : Effect.fail(unavailable)
    })

    return {
      name: EVENTS_PHASE,
      // With the general key, once the checks that count its requests are done.
      after: [GENERAL_PHASE, STORE_PHASE],
      checks: [
        check(
          "events.list",
          "GET /events: 200 with a list of events",
          Effect.gen(function*() {
            const exchange = yield* send("GET", "/events")
            yield* expectStatus(exchange, 200)
            yield* ensure(
              eventsOf(exchange.json) !== undefined,
              exchange,
              "a JSON array of events, or an object holding one"
            )
          })
        ),
        check(
          "events.auth",
          "GET /events: 401 without an Authorization header",
          Effect.gen(function*() {
            yield* keyed
            yield* expectError(yield* Http.use((http) => http.send({ path: "/events", credential: anonymous })), 401)
          })
        ),
        check(
          "events.pet-created",
          "GET /events: a created pet's event, with the pet as created, catches up",
          Effect.gen(function*() {
            const pet = yield* newPet
            yield* awaitEvent(
              `an event holding the pet ${JSON.stringify(pet)}`,
              (event) => event.includes(JSON.stringify(pet.name)) && new RegExp(`"id":${pet.id}(?!\\d)`).test(event)
            )
          })
        ),
        check(
          "events.order-placed-cancelled",
          "GET /events: an order placed and then cancelled gives an event of each",
          Effect.gen(function*() {
            const pet = yield* newPet
            const placed = yield* send("POST", "/store/orders", { petId: pet.id })
            if (placed.status === 404 || placed.status === 405) {
              return yield* skipped(`placeOrder answered ${placed.status}: the deployment has no store area`)
            }
            yield* expectStatus(placed, 201)
            const order = placed.json as { readonly id?: unknown }
            yield* ensure(typeof order.id === "number", placed, "an Order with an id")
            yield* expectStatus(yield* send("POST", `/store/orders/${order.id}/cancel`), 200)
            const ofOrder = (status: string) => (event: string) =>
              new RegExp(`"id":${order.id}(?!\\d)`).test(event) && event.includes(`"petId":${pet.id}`) &&
              event.includes(`"status":"${status}"`)
            yield* awaitEvent(`an event of order ${order.id} placed`, ofOrder("placed"))
            yield* awaitEvent(`an event of order ${order.id} cancelled`, ofOrder("cancelled"))
          })
        )
      ]
    } satisfies Phase
  })
