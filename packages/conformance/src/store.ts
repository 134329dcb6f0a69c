import { Order, Orders, Pet } from "@petstore/contract"
import { Effect } from "effect"
import { type Check, type Phase, skipped } from "./checks.ts"
import { GENERAL_PHASE, type RunContext, STAFF_KEY_HINT } from "./context.ts"
import { decodeBody, ensure, expectError, expectStatus, failure, header, integerHeader } from "./expect.ts"
import { nextLink } from "./general.ts"
import { anonymous, type Credential, describeResponse, type Exchange, Http, type SendOptions, withKey } from "./http.ts"
import { type ApiKey, CheckFailed, type CheckSkipped, type Plan, PLANS } from "./model.ts"

export const STORE_PHASE = "store"

/** Concurrent orders for one pet in the race check: enough that a lost update shows, few enough for a free key's minute. */
export const RACE_ORDERS = 10

/** An id no store is expected to have reached: the largest integer JSON carries exactly. */
const UNKNOWN_ID = 9_007_199_254_740_991

/** Pages of 100 the checks walk to find this run's orders in a listing before giving up. */
const MAX_PAGES = 20

/** Keys of more room first, as for the general checks. */
const PREFERENCE: ReadonlyArray<Plan> = ["business", "enterprise", "pro", "free"]

/** The operations the README marks beta: `PATCH`/`DELETE /pets/{petId}` and everything under `/store/orders`. */
export const isBetaOperation = (exchange: Pick<Exchange, "method" | "url">) => {
  const path = new URL(exchange.url).pathname
  return /\/store\/orders(\/|$)/.test(path) || (/\/pets\/[^/]+$/.test(path) && /^(PATCH|DELETE)$/.test(exchange.method))
}

/**
 * The customer keys the store checks may use without disturbing the plan
 * checks, which count a key's quota exactly: the keys no plan phase spends
 * (a plan's first key when it has a second, the general checks' key once they
 * are done), and, when fewer than two are left, as many of the plans' burst
 * keys as make two, after their plan's checks. A key that spends its day
 * with `--daily` is never used.
 */
export const storeCustomers = (run: Pick<RunContext, "keys" | "daily">) => {
  const burstKeyOf = (plan: Plan) => run.keys[plan][1] ?? run.keys[plan][0]
  const dailyKeyOf = (plan: Plan) => run.keys[plan][2] ?? burstKeyOf(plan)
  const ordered = PREFERENCE.flatMap((plan) => run.keys[plan])
  const usable = ordered.filter((key) => !(run.daily && PLANS.some((plan) => dailyKeyOf(plan) === key)))
  const isBurstKey = (key: ApiKey) => PLANS.some((plan) => burstKeyOf(plan) === key)
  const idle = usable.filter((key) => !isBurstKey(key))
  const borrowed = usable.filter(isBurstKey).slice(0, Math.max(0, 2 - idle.length))
  const customers = ordered.filter((key) => idle.includes(key) || borrowed.includes(key)).slice(0, 3)
  const waitFor = PLANS.filter((plan) => customers.includes(burstKeyOf(plan)!))
  return { customers, after: [GENERAL_PHASE, ...waitFor] }
}

const check = (id: string, title: string, run: Check["run"]): Check => ({
  id: `store.${id}`,
  area: "store",
  tag: "extension",
  title,
  run
})

/** The error's status, Error body and code. */
const expectCode = (exchange: Exchange, status: number, code: string) =>
  Effect.gen(function*() {
    yield* expectError(exchange, status)
    const actual = (exchange.json as { code?: unknown }).code
    yield* ensure(actual === code, exchange, `status ${status} with code ${code}`)
  })

const showOrder = (order: Order) => JSON.stringify({ id: order.id, petId: order.petId, status: order.status })

/**
 * The store area of the README (beta): changing and deleting pets with
 * `ETag`/`If-Match`, orders and their transitions, who may do what, the
 * one-winner race and the `Stability: beta` header. Every check is an `extension`.
 */
export const storePhase = (run: RunContext): Effect.Effect<Phase> =>
  Effect.gen(function*() {
    const { customers, after } = storeCustomers(run)
    const [customer, otherCustomer] = customers
    const staffKey = run.staffKey

    const noCustomer = skipped(
      "needs a customer key that no plan check spends meanwhile: give keys of a plan (business=KEY, …; two per plan are best)"
    )
    const noOtherCustomer = skipped(
      "needs a second customer key, which no plan check spends meanwhile: give two keys of a plan (or keys of two plans)"
    )
    const noStaff = skipped(`needs a staff key: ${STAFF_KEY_HINT}`)

    const theCustomer: Effect.Effect<ApiKey, CheckSkipped> = customer === undefined
      ? Effect.fail(noCustomer)
      : Effect.succeed(customer)
    const theOtherCustomer: Effect.Effect<ApiKey, CheckSkipped> = otherCustomer === undefined
      ? Effect.fail(noOtherCustomer)
      : Effect.succeed(otherCustomer)
    const theStaff: Effect.Effect<ApiKey, CheckSkipped> = staffKey === undefined
      ? Effect.fail(noStaff)
      : Effect.succeed(staffKey)

    /** Every answer this phase received, for the checks of headers on every beta answer. */
    const answers: Array<Exchange> = []

    const send = (options: SendOptions) =>
      Effect.tap(Http.use((http) => http.send(options)), (exchange) => Effect.sync(() => answers.push(exchange)))

    const call = (key: ApiKey | Credential, method: string, path: string, options: Partial<SendOptions> = {}) =>
      send({ method, path, credential: "secret" in key ? withKey(key) : key, ...options })

    /** A new pet of the customer's, as createPet answered it, with its ETag. */
    const newPet = (status?: "available" | "pending" | "sold") =>
      Effect.gen(function*() {
        const key = yield* theCustomer
        const exchange = yield* call(key, "POST", "/pets", {
          json: { name: run.petName(), categoryId: 17, ...(status === undefined ? {} : { status }) }
        })
        yield* expectStatus(exchange, 201)
        return { pet: yield* decodeBody(Pet, exchange, "a Pet"), etag: header(exchange, "etag") ?? "", exchange }
      })

    const getPet = (id: number) =>
      Effect.gen(function*() {
        const exchange = yield* call(yield* theCustomer, "GET", `/pets/${id}`)
        yield* expectStatus(exchange, 200)
        return { pet: yield* decodeBody(Pet, exchange, "a Pet"), exchange }
      })

    const expectPetStatus = (id: number, status: string, why: string) =>
      Effect.gen(function*() {
        const { pet, exchange } = yield* getPet(id)
        yield* ensure(pet.status === status, exchange, `pet ${id} ${status}: ${why}`, `status ${pet.status}`)
      })

    /** An order placed by `key` for the pet, which must be answered 201. */
    const placeOrder = (key: ApiKey, petId: number, headers: Record<string, string> = {}) =>
      Effect.gen(function*() {
        const exchange = yield* call(key, "POST", "/store/orders", { json: { petId }, headers })
        yield* expectStatus(exchange, 201)
        return { order: yield* decodeBody(Order, exchange, "an Order"), exchange }
      })

    const newOrder = (key?: ApiKey) =>
      Effect.gen(function*() {
        const { pet } = yield* newPet()
        const { order } = yield* placeOrder(key ?? (yield* theCustomer), pet.id)
        return { pet, order }
      })

    const getOrder = (key: ApiKey, id: number) => call(key, "GET", `/store/orders/${id}`)

    const expectOrderStatus = (key: ApiKey, id: number, status: string, why: string) =>
      Effect.gen(function*() {
        const exchange = yield* getOrder(key, id)
        yield* expectStatus(exchange, 200)
        const order = yield* decodeBody(Order, exchange, "an Order")
        yield* ensure(order.status === status, exchange, `order ${id} ${status}: ${why}`, showOrder(order))
      })

    const move = (key: ApiKey, id: number, transition: "cancel" | "deliver") =>
      call(key, "POST", `/store/orders/${id}/${transition}`)

    /** The ids of every order `key` lists (pages of 100, following `Link`), up to MAX_PAGES pages. */
    const listedIds = (key: ApiKey, query = "") =>
      Effect.gen(function*() {
        const ids: Array<number> = []
        let next: string | undefined = `/store/orders?limit=100${query}`
        for (let page = 0; page < MAX_PAGES && next !== undefined; page++) {
          const exchange: Exchange = yield* call(key, "GET", next)
          yield* expectStatus(exchange, 200)
          ids.push(...(yield* decodeBody(Orders, exchange, "a JSON array of Orders")).map((order) => order.id))
          next = nextLink(exchange)
        }
        return { ids, complete: next === undefined }
      })

    /** The one order every check about a placed order shares: placed by the customer, its pet pending. */
    const placed = yield* Effect.cached(Effect.gen(function*() {
      const { pet } = yield* newPet()
      const placement = yield* placeOrder(yield* theCustomer, pet.id)
      return { pet, ...placement }
    }))

    const cancelled = yield* Effect.cached(Effect.gen(function*() {
      const { pet, order } = yield* newOrder()
      const exchange = yield* move(yield* theCustomer, order.id, "cancel")
      return { pet, order, exchange }
    }))

    const delivered = yield* Effect.cached(Effect.gen(function*() {
      const staff = yield* theStaff
      const { pet, order } = yield* newOrder()
      const exchange = yield* move(staff, order.id, "deliver")
      return { pet, order, exchange }
    }))

    const pets: Array<Check> = [
      check(
        "etag",
        "getPet and createPet: an ETag on every Pet answer",
        Effect.gen(function*() {
          const { pet, etag, exchange } = yield* newPet()
          yield* ensure(
            /^"[^"]+"$/.test(etag),
            exchange,
            "ETag: a strong entity tag (\"…\")",
            describeResponse(exchange, ["etag"])
          )
          const fetched = yield* getPet(pet.id)
          yield* ensure(
            header(fetched.exchange, "etag") === etag,
            fetched.exchange,
            `ETag: ${etag}, as createPet answered (nothing changed)`,
            describeResponse(fetched.exchange, ["etag"])
          )
        })
      ),
      check(
        "patch",
        "updatePet: 200 with the changed Pet and a new ETag; {} changes nothing",
        Effect.gen(function*() {
          const { pet, etag } = yield* newPet()
          const name = run.petName()
          const exchange = yield* call(yield* theCustomer, "PATCH", `/pets/${pet.id}`, {
            json: { name, categoryId: 23 }
          })
          yield* expectStatus(exchange, 200)
          const patched = yield* decodeBody(Pet, exchange, "a Pet")
          yield* ensure(
            patched.id === pet.id && patched.name === name && patched.categoryId === 23 &&
              patched.status === pet.status,
            exchange,
            `pet ${pet.id} named ${name}, categoryId 23, status ${pet.status}`
          )
          const newTag = header(exchange, "etag") ?? ""
          yield* ensure(
            /^"[^"]+"$/.test(newTag) && newTag !== etag,
            exchange,
            `an ETag other than ${etag}: the pet changed`,
            describeResponse(exchange, ["etag"])
          )
          const fetched = yield* getPet(pet.id)
          yield* ensure(
            fetched.pet.name === name && fetched.pet.categoryId === 23,
            fetched.exchange,
            `getPet to show the change: name ${name}`
          )
          const unchanged = yield* call(yield* theCustomer, "PATCH", `/pets/${pet.id}`, { json: {} })
          yield* expectStatus(unchanged, 200)
          yield* ensure(
            header(unchanged, "etag") === newTag,
            unchanged,
            `ETag: ${newTag} still: a PATCH of {} changes nothing`,
            describeResponse(unchanged, ["etag"])
          )
        })
      ),
      check(
        "patch-status",
        "updatePet: status in the body is 400 saying that status changes through orders",
        Effect.gen(function*() {
          const { pet } = yield* newPet()
          const exchange = yield* call(yield* theCustomer, "PATCH", `/pets/${pet.id}`, { json: { status: "sold" } })
          yield* expectCode(exchange, 400, "invalid_request")
          yield* ensure(/order/i.test(exchange.text), exchange, "the answer to say that status changes through orders")
          yield* expectPetStatus(pet.id, "available", "a refused PATCH changes nothing")
        })
      ),
      check(
        "patch-unknown-field",
        "updatePet: an unknown field is 400 naming it",
        Effect.gen(function*() {
          const { pet } = yield* newPet()
          const exchange = yield* call(yield* theCustomer, "PATCH", `/pets/${pet.id}`, { json: { categoryID: 2 } })
          yield* expectCode(exchange, 400, "invalid_request")
          yield* ensure(exchange.text.includes("categoryID"), exchange, "the answer to name the field categoryID")
        })
      ),
      check(
        "patch-unknown",
        "updatePet: an unknown pet is 404",
        Effect.gen(function*() {
          yield* expectCode(
            yield* call(yield* theCustomer, "PATCH", `/pets/${UNKNOWN_ID}`, { json: { name: "x" } }),
            404,
            "not_found"
          )
        })
      ),
      check(
        "if-match",
        "updatePet: a stale If-Match is 412 precondition_failed, and nothing changes",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { pet, etag } = yield* newPet()
          const name = run.petName()
          const current = yield* call(key, "PATCH", `/pets/${pet.id}`, {
            json: { name },
            headers: { "if-match": etag }
          })
          yield* expectStatus(current, 200)
          const stale = yield* call(key, "PATCH", `/pets/${pet.id}`, {
            json: { name: run.petName() },
            headers: { "if-match": etag }
          })
          yield* expectCode(stale, 412, "precondition_failed")
          const fetched = yield* getPet(pet.id)
          yield* ensure(fetched.pet.name === name, fetched.exchange, `name ${name}: the stale PATCH changed nothing`)
        })
      ),
      check(
        "delete",
        "deletePet with a staff key: 204, then the pet is 404; a stale If-Match is 412",
        Effect.gen(function*() {
          const staff = yield* theStaff
          const { pet, etag } = yield* newPet()
          const renamed = yield* call(yield* theCustomer, "PATCH", `/pets/${pet.id}`, { json: { name: run.petName() } })
          yield* expectStatus(renamed, 200)
          yield* expectCode(
            yield* call(staff, "DELETE", `/pets/${pet.id}`, { headers: { "if-match": etag } }),
            412,
            "precondition_failed"
          )
          const deleted = yield* call(staff, "DELETE", `/pets/${pet.id}`, {
            headers: { "if-match": header(renamed, "etag") ?? "*" }
          })
          yield* ensure(deleted.status === 204 && deleted.text === "", deleted, "204 with no body")
          yield* expectCode(yield* call(yield* theCustomer, "GET", `/pets/${pet.id}`), 404, "not_found")
          yield* expectCode(yield* call(staff, "DELETE", `/pets/${pet.id}`), 404, "not_found")
        })
      ),
      check(
        "delete-forbidden",
        "deletePet: a customer key gets 403 forbidden, and the pet stays; an unknown pet too",
        Effect.gen(function*() {
          const { pet } = yield* newPet()
          yield* expectCode(yield* call(yield* theCustomer, "DELETE", `/pets/${pet.id}`), 403, "forbidden")
          yield* getPet(pet.id)
          // The role is checked before anything else of the request: a customer learns nothing about which pets exist.
          yield* expectCode(yield* call(yield* theCustomer, "DELETE", `/pets/${UNKNOWN_ID}`), 403, "forbidden")
        })
      ),
      check(
        "delete-open-order",
        "deletePet: 409 pet_has_open_order while an order of it is placed",
        Effect.gen(function*() {
          const staff = yield* theStaff
          const { pet, order } = yield* newOrder()
          yield* expectCode(yield* call(staff, "DELETE", `/pets/${pet.id}`), 409, "pet_has_open_order")
          yield* expectPetStatus(pet.id, "pending", "the refused DELETE left the pet and its order")
          yield* expectStatus(yield* move(yield* theCustomer, order.id, "cancel"), 200)
        })
      )
    ]

    const orders: Array<Check> = [
      check(
        "order-place",
        "placeOrder: 201 with the Order and Location, and the pet becomes pending",
        Effect.gen(function*() {
          const { pet, order, exchange } = yield* placed
          yield* ensure(
            order.petId === pet.id && order.status === "placed",
            exchange,
            `an Order of pet ${pet.id} with status placed`,
            showOrder(order)
          )
          const location = header(exchange, "location") ?? ""
          const path = location.startsWith("/")
            ? location
            : URL.canParse(location)
            ? new URL(location).pathname
            : location
          yield* ensure(
            path === `/v1/store/orders/${order.id}`,
            exchange,
            `Location: /v1/store/orders/${order.id}`,
            `Location: ${location || "(none)"}`
          )
          yield* expectPetStatus(pet.id, "pending", "an order is placed for it")
          yield* expectOrderStatus(yield* theCustomer, order.id, "placed", "getOrder shows the order placed")
        })
      ),
      check(
        "order-not-available",
        "placeOrder: a pet that is not available is 409 pet_not_available",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { pet } = yield* placed
          yield* expectCode(
            yield* call(key, "POST", "/store/orders", { json: { petId: pet.id } }),
            409,
            "pet_not_available"
          )
          const sold = yield* newPet("sold")
          yield* expectCode(
            yield* call(key, "POST", "/store/orders", { json: { petId: sold.pet.id } }),
            409,
            "pet_not_available"
          )
        })
      ),
      check(
        "order-unknown-pet",
        "placeOrder: an unknown pet is 404",
        Effect.gen(function*() {
          yield* expectCode(
            yield* call(yield* theCustomer, "POST", "/store/orders", { json: { petId: UNKNOWN_ID } }),
            404,
            "not_found"
          )
        })
      ),
      check(
        "order-unknown",
        "getOrder, cancelOrder: an unknown order is 404",
        Effect.gen(function*() {
          const key = yield* theCustomer
          yield* expectCode(yield* getOrder(key, UNKNOWN_ID), 404, "not_found")
          yield* expectCode(yield* move(key, UNKNOWN_ID, "cancel"), 404, "not_found")
        })
      ),
      check(
        "cancel",
        "cancelOrder: the order becomes cancelled and its pet available",
        Effect.gen(function*() {
          const { pet, order, exchange } = yield* cancelled
          yield* expectStatus(exchange, 200)
          const moved = yield* decodeBody(Order, exchange, "an Order")
          yield* ensure(
            moved.id === order.id && moved.status === "cancelled",
            exchange,
            `order ${order.id} cancelled`,
            showOrder(moved)
          )
          yield* expectPetStatus(pet.id, "available", "its order was cancelled")
          yield* expectOrderStatus(yield* theCustomer, order.id, "cancelled", "getOrder shows the order cancelled")
        })
      ),
      check(
        "deliver",
        "deliverOrder with a staff key: the order becomes delivered and its pet sold",
        Effect.gen(function*() {
          const { pet, order, exchange } = yield* delivered
          yield* ensure(exchange.status === 200, exchange, "status 200: a staff key delivers any placed order")
          const moved = yield* decodeBody(Order, exchange, "an Order")
          yield* ensure(
            moved.id === order.id && moved.status === "delivered",
            exchange,
            `order ${order.id} delivered`,
            showOrder(moved)
          )
          yield* expectPetStatus(pet.id, "sold", "its order was delivered")
          yield* expectOrderStatus(yield* theCustomer, order.id, "delivered", "getOrder shows the order delivered")
        })
      ),
      check(
        "deliver-forbidden",
        "deliverOrder: a customer key gets 403 forbidden, even for its own order",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { pet, order } = yield* newOrder()
          yield* expectCode(yield* move(key, order.id, "deliver"), 403, "forbidden")
          yield* expectOrderStatus(key, order.id, "placed", "the refused delivery changed nothing")
          yield* expectPetStatus(pet.id, "pending", "the refused delivery changed nothing")
          yield* expectStatus(yield* move(key, order.id, "cancel"), 200)
        })
      ),
      check(
        "invalid-transition",
        "cancel or deliver an order that is not placed: 409 invalid_transition naming its status",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { order } = yield* cancelled
          const again = yield* move(key, order.id, "cancel")
          yield* expectCode(again, 409, "invalid_transition")
          yield* ensure(
            /cancelled/.test(exchangeMessage(again)),
            again,
            "a message naming the order's status, cancelled"
          )
          if (staffKey === undefined) return
          yield* expectCode(yield* move(staffKey, order.id, "deliver"), 409, "invalid_transition")
          const done = yield* delivered
          for (const transition of ["cancel", "deliver"] as const) {
            const refused = yield* move(staffKey, done.order.id, transition)
            yield* expectCode(refused, 409, "invalid_transition")
            yield* ensure(
              /delivered/.test(exchangeMessage(refused)),
              refused,
              "a message naming the order's status, delivered"
            )
          }
          yield* expectPetStatus(done.pet.id, "sold", "the refused transitions changed nothing")
        })
      ),
      check(
        "other-customer",
        "another customer's order is 404, never 403: reading and cancelling it, and it is not listed",
        Effect.gen(function*() {
          const other = yield* theOtherCustomer
          const { order } = yield* placed
          yield* expectCode(yield* getOrder(other, order.id), 404, "not_found")
          yield* expectCode(yield* move(other, order.id, "cancel"), 404, "not_found")
          yield* expectOrderStatus(yield* theCustomer, order.id, "placed", "another customer's cancel changed nothing")
          const { ids } = yield* listedIds(other)
          if (ids.includes(order.id)) {
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/store/orders (${other.label})`,
              expected: `only that key's orders, not order ${order.id} of ${customer!.label}`,
              received: `order ${order.id} among the ${ids.length} listed`
            })
          }
        })
      ),
      check(
        "staff-every-order",
        "a staff key reads and cancels any order, and lists every order",
        Effect.gen(function*() {
          const staff = yield* theStaff
          const mine = yield* placed
          yield* expectOrderStatus(staff, mine.order.id, "placed", "staff read any order")
          const theirs = otherCustomer === undefined ? undefined : yield* newOrder(otherCustomer)
          const { ids, complete } = yield* listedIds(staff)
          const wanted = [mine.order.id, ...(theirs === undefined ? [] : [theirs.order.id])]
          const missing = wanted.filter((id) => !ids.includes(id))
          if (missing.length > 0) {
            if (!complete) {
              return yield* skipped(`more than ${MAX_PAGES * 100} orders precede this run's in the staff listing`)
            }
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/store/orders (staff key), every page`,
              expected: `every order, among them ${wanted.join(" and ")} of two customer keys`,
              received: `${ids.length} orders without ${missing.join(" and ")}`
            })
          }
          if (theirs !== undefined) {
            const cancel = yield* move(staff, theirs.order.id, "cancel")
            yield* expectStatus(cancel, 200)
            yield* expectPetStatus(theirs.pet.id, "available", "staff cancelled its order")
          }
        })
      ),
      check(
        "list",
        "listOrders: the caller's orders, as a bare array in ascending id order",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { order } = yield* placed
          yield* cancelled
          const { ids } = yield* listedIds(key)
          const index = ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]!)
          if (index !== -1 || !ids.includes(order.id)) {
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/store/orders?limit=100 (${key.label}), every page`,
              expected: `orders in ascending id order, among them order ${order.id}`,
              received: index !== -1
                ? `id ${ids[index]} after ${ids[index - 1]}`
                : `${ids.length} orders without ${order.id}`
            })
          }
        })
      ),
      check(
        "list-pagination",
        "listOrders: limit, and Link rel=\"next\" continuing after the page",
        Effect.gen(function*() {
          const key = yield* theCustomer
          yield* placed
          yield* cancelled
          yield* newOrder()
          const whole = yield* call(key, "GET", "/store/orders?limit=3")
          yield* expectStatus(whole, 200)
          const expected = (yield* decodeBody(Orders, whole, "a JSON array of Orders")).map((order) => order.id)
          const first = yield* call(key, "GET", "/store/orders?limit=2")
          yield* expectStatus(first, 200)
          const firstPage = yield* decodeBody(Orders, first, "a JSON array of Orders")
          yield* ensure(
            firstPage.length === 2,
            first,
            "exactly 2 orders (limit=2, and the key has 3)",
            describeResponse(first)
          )
          const next = nextLink(first)
          yield* ensure(
            next !== undefined,
            first,
            "Link: <…>; rel=\"next\" (more orders follow)",
            `Link: ${header(first, "link") ?? "(none)"}`
          )
          const second = yield* call(key, "GET", next!)
          yield* expectStatus(second, 200)
          const ids = [...firstPage, ...(yield* decodeBody(Orders, second, "a JSON array of Orders"))].map((order) =>
            order.id
          ).slice(0, 3)
          yield* ensure(
            ids.join() === expected.join(),
            second,
            `the two pages to start with the first three orders: ${expected.join(", ")}`,
            ids.join(", ")
          )
        })
      ),
      check(
        "list-status-filter",
        "listOrders: status=… returns only orders of that status; an unknown status is 400",
        Effect.gen(function*() {
          const key = yield* theCustomer
          yield* placed
          yield* cancelled
          const statuses = ["placed", "cancelled", ...(staffKey === undefined ? [] : ["delivered"])]
          if (staffKey !== undefined) yield* delivered
          for (const status of statuses) {
            const exchange = yield* call(key, "GET", `/store/orders?status=${status}&limit=100`)
            yield* expectStatus(exchange, 200)
            const page = yield* decodeBody(Orders, exchange, "a JSON array of Orders")
            yield* ensure(page.length > 0, exchange, `at least the ${status} order this run made`, "an empty array")
            const other = page.find((order) => order.status !== status)
            yield* ensure(
              other === undefined,
              exchange,
              `only ${status} orders`,
              `${other && showOrder(other)} among them`
            )
          }
          yield* expectCode(yield* call(key, "GET", "/store/orders?status=adopted"), 400, "invalid_request")
        })
      ),
      check(
        "order-idempotency",
        "placeOrder: a retry with the same Idempotency-Key replays the order; another pet is 422",
        Effect.gen(function*() {
          const key = yield* theCustomer
          const { pet } = yield* newPet()
          const headers = { "idempotency-key": `conformance-${run.runId}-order` }
          const { order, exchange } = yield* placeOrder(key, pet.id, headers)
          const replay = yield* call(key, "POST", "/store/orders", { json: { petId: pet.id }, headers })
          yield* expectStatus(replay, 201)
          const replayed = yield* decodeBody(Order, replay, "the same Order")
          yield* ensure(
            replayed.id === order.id && header(replay, "location") === header(exchange, "location") &&
              header(replay, "idempotent-replayed") === "true",
            replay,
            `order ${order.id} again, Location: ${header(exchange, "location")}, with Idempotent-Replayed: true`,
            describeResponse(replay, ["location", "idempotent-replayed"])
          )
          const another = yield* newPet()
          yield* expectCode(
            yield* call(key, "POST", "/store/orders", { json: { petId: another.pet.id }, headers }),
            422,
            "idempotency_key_reused"
          )
          yield* expectPetStatus(another.pet.id, "available", "the refused retry placed no order")
          yield* expectStatus(yield* move(key, order.id, "cancel"), 200)
        })
      ),
      check(
        "order-race",
        `placeOrder: of ${RACE_ORDERS} concurrent orders for one pet from several keys, one is 201, the others 409 pet_not_available`,
        Effect.gen(function*() {
          yield* theCustomer
          const racers = [...customers, ...(staffKey === undefined ? [] : [staffKey])]
          const { pet } = yield* newPet()
          const placements = yield* Effect.forEach(
            Array.from({ length: RACE_ORDERS }, (_, index) => racers[index % racers.length]!),
            (key) => call(key, "POST", "/store/orders", { json: { petId: pet.id } }),
            { concurrency: "unbounded" }
          )
          const won = placements.filter((exchange) => exchange.status === 201)
          const lost = placements.filter((exchange) =>
            exchange.status === 409 && (exchange.json as { code?: unknown })?.code === "pet_not_available"
          )
          const tally =
            `${placements.length} orders from ${racers.length} keys: ${won.length} × 201, ${lost.length} × 409 pet_not_available` +
            (placements.length - won.length - lost.length > 0
              ? `, ${placements.length - won.length - lost.length} other`
              : "")
          run.progress(`store: race for pet ${pet.id}: ${tally}`)
          if (won.length !== 1 || lost.length !== RACE_ORDERS - 1) {
            const example = placements.find((exchange) => exchange.status !== 201 && !lost.includes(exchange)) ??
              won[1] ?? placements[0]!
            return yield* failure(
              example,
              `exactly one 201 and ${RACE_ORDERS - 1} × 409 pet_not_available`,
              `${tally}; for instance ${describeResponse(example)}`
            )
          }
          const order = yield* decodeBody(Order, won[0]!, "an Order")
          const winner = racers[placements.indexOf(won[0]!) % racers.length]!
          yield* expectStatus(yield* move(winner, order.id, "cancel"), 200)
        })
      )
    ]

    const betaAnswers = () => answers.filter(isBetaOperation)

    /** A few answers of every beta operation, errors included, whatever else ran. */
    const sampleEveryOperation = Effect.gen(function*() {
      const key = yield* theCustomer
      yield* call(key, "GET", "/store/orders?limit=1")
      yield* getOrder(key, UNKNOWN_ID)
      yield* call(key, "POST", "/store/orders", { json: {} })
      yield* move(key, UNKNOWN_ID, "cancel")
      yield* move(key, UNKNOWN_ID, "deliver")
      yield* call(key, "PATCH", `/pets/${UNKNOWN_ID}`, { json: { name: "x" } })
      yield* call(key, "DELETE", `/pets/${UNKNOWN_ID}`)
      yield* call(anonymous, "GET", "/store/orders")
    })
    const sampled = yield* Effect.cached(sampleEveryOperation)

    const headers: Array<Check> = [
      check(
        "stability",
        "every answer of a beta operation says Stability: beta, errors too; stable operations do not",
        Effect.gen(function*() {
          yield* sampled
          const beta = betaAnswers()
          const unmarked = beta.filter((exchange) => header(exchange, "stability")?.toLowerCase() !== "beta")
          if (unmarked.length > 0) {
            return yield* failure(
              unmarked[0]!,
              "Stability: beta",
              `${
                describeResponse(unmarked[0]!, ["stability"])
              } (${unmarked.length} of ${beta.length} beta answers without it)`
            )
          }
          const marked = answers.find((exchange) =>
            !isBetaOperation(exchange) && header(exchange, "stability") !== undefined
          )
          if (marked !== undefined) {
            return yield* failure(
              marked,
              "no Stability header on a stable operation",
              describeResponse(marked, ["stability"])
            )
          }
        })
      ),
      check(
        "rate-limits",
        "beta operations spend quota and carry every rate-limit header",
        Effect.gen(function*() {
          yield* sampled
          const keyed = betaAnswers().filter((exchange) => !exchange.credential.startsWith("no Authorization"))
          const names = [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "ratelimit-policy",
            "ratelimit"
          ]
          const lacking = keyed.find((exchange) => names.some((name) => header(exchange, name) === undefined))
          if (lacking !== undefined) {
            return yield* failure(
              lacking,
              "X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy and RateLimit, as on every operation",
              describeResponse(lacking, ["ratelimit-policy", "ratelimit"])
            )
          }
          const key = yield* theCustomer
          // Two in one window, twice at most: a window may reset between them.
          for (let attempt = 0; attempt < 2; attempt++) {
            const before = yield* call(key, "GET", "/store/orders?limit=1")
            const after = yield* call(key, "GET", "/store/orders?limit=1")
            if (header(before, "x-ratelimit-reset") !== header(after, "x-ratelimit-reset") && attempt === 0) continue
            const expected = integerHeader(before, "x-ratelimit-remaining") - 1
            yield* ensure(
              integerHeader(after, "x-ratelimit-remaining") === expected,
              after,
              `X-RateLimit-Remaining: ${expected}, one less than the listOrders before: it spends quota`
            )
            return
          }
        })
      )
    ]

    return { name: STORE_PHASE, after, checks: [...pets, ...orders, ...headers] } satisfies Phase
  })

const exchangeMessage = (exchange: Exchange) =>
  String((exchange.json as { message?: unknown } | undefined)?.message ?? "")
