// @ts-check
/**
 * adoption.js — the store's adoption flow (beta operations, README "Orders"): customers browse the
 * available pets, order one, and then cancel the order or have staff deliver it.
 *
 *   API_KEYS=psk_a,psk_b,… API_KEY_STAFF=psk_s k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/adoption.js
 *
 * Each iteration is one customer's visit, with one key of API_KEYS (round-robin, as in load.js):
 *   1. browse   GET /v1/pets?status=available&limit=20: a page of available pets. When it is empty (every pet
 *               ordered or sold) the customer restocks: POST /v1/pets, a new available pet.
 *   2. order    POST /v1/store/orders {petId} for a pet of the page, chosen at random: 201 with the placed
 *               order, or 409 pet_not_available when another visit ordered it first. Visits race for the
 *               same page of pets; the store gives each pet to one order at a time.
 *   3. read     GET /v1/store/orders/{orderId}: the customer's order, still placed (only this visit closes it).
 *   4. close    DELIVER_SHARE of the visits have staff deliver it, POST …/deliver with API_KEY_STAFF: 200,
 *               delivered, and the pet (GET /v1/pets/{petId}) is then sold for good. The others cancel it,
 *               POST …/cancel with the customer's key: 200, cancelled, and the pet is available again.
 *
 * Every answer but a 429 is checked: Pets that are all available, the Order's shape and fields,
 * `Location`, `Stability: beta`, the Error body with code pet_not_available. A 429 ends the visit (the VU
 * leaves that key alone for its Retry-After); an order left placed by it is counted in orders_left_open.
 *
 * Alongside, the `rush` scenario settles races on purpose, whatever the timing: RUSHES times, one VU adds
 * an available pet and sends RUSH_SIZE orders for it at once (`http.batch`, from the keys of API_KEYS in
 * turn). Exactly one is 201 and every other 409 pet_not_available; the winner then cancels its order.
 *
 * Environment:
 *   BASE_URL        API address including /v1 (default http://localhost:8080/v1)
 *   API_KEYS        comma-separated customer keys, required; together they must allow about RATE×4×60
 *                   requests a minute (a visit makes four: browse, order, read, close)
 *   API_KEY_STAFF   a staff key, for the deliveries (README "Roles"); without it every order is cancelled
 *   DELIVER_SHARE   share of the visits whose order staff deliver, 0 to 1 (default 0.3); the rest cancel
 *   RATE            visits per second (default 5)
 *   DURATION        how long (default 60s)
 *   VUS, MAX_VUS    pre-allocated and maximum VUs (default 10 and 50)
 *   SEED_PETS       available pets created in setup (default 20)
 *   RUSHES          races of the rush scenario, 0 for none (default 5)
 *   RUSH_SIZE       concurrent orders for one pet in each race, at least 2 (default 8)
 *   P95_MS, P99_MS  latency thresholds of every request (defaults 250 and 500)
 *   P95_ORDER_MS, P95_CLOSE_MS   p95 of placing an order, and of cancelling or delivering one (default 300 each)
 *   MAX_ERROR_RATE  share of failed requests allowed (default 0): any status a step does not expect, 429 apart
 *   MAX_429_RATE    share of requests refused for quota allowed (default 0.02)
 */
import http from "k6/http"
import exec from "k6/execution"
import { check } from "k6"
import { Counter } from "k6/metrics"
import { requireKeys } from "./lib/config.js"
import { adoptionSettings } from "./lib/options.js"
import {
  bodyJson,
  header,
  isErrorBody,
  isOrder,
  isPet,
  isPetArray,
  isRecord,
  jsonHeaders,
  retryAfterSeconds
} from "./lib/api.js"
import {
  flowRequest,
  holdKey,
  pickKey,
  rateLimited,
  seedGuards,
  seedPets,
  throttledByClient,
  verifyKeys,
  verifyStaffKey,
  warnOnCapacity
} from "./lib/traffic.js"
/** @import { Response } from "k6/http" */

const SETTINGS = adoptionSettings()
const BASE_URL = SETTINGS.baseUrl
const KEYS = SETTINGS.keys
const STAFF_KEY = SETTINGS.staffKey
const DELIVER_SHARE = SETTINGS.deliverShare
const RATE = SETTINGS.rate
const DURATION = SETTINGS.duration
const RUSHES = SETTINGS.rushes
const RUSH_SIZE = SETTINGS.rushSize

/** Requests a visit makes with the customer's key, for the capacity warning. */
const REQUESTS_PER_VISIT = 4

const ordersPlaced = new Counter("orders_placed")
const ordersRefused = new Counter("orders_refused")
const ordersCancelled = new Counter("orders_cancelled")
const ordersDelivered = new Counter("orders_delivered")
const ordersLeftOpen = new Counter("orders_left_open")
const petsRestocked = new Counter("pets_restocked")
/** Races of the rush scenario that ended as they must: one order placed, every other refused. */
const rushesSettled = new Counter("rushes_settled")

// One callback per set of expected statuses, made in the init context. 429 is always expected: quota is
// judged by rate_limited, not as an error.
const EXPECT = {
  200: http.expectedStatuses(200, 429),
  201: http.expectedStatuses(201, 429),
  "201|409": http.expectedStatuses(201, 409, 429)
}

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

/** Per-VU state: when the staff key's Retry-After runs out (Unix ms). */
const staff = { heldUntil: 0 }

/**
 * One request of a visit (lib/traffic.js flowRequest), tagged with its step, its latency recorded unless it
 * was refused for quota.
 * @param {string} op the step: browse, restock, order, read, close, pet
 * @param {string} name the route, for the request's `name` tag
 * @param {string} method
 * @param {string} path under BASE_URL
 * @param {unknown} body sent as JSON, or null
 * @param {string} key
 * @param {keyof typeof EXPECT} expect
 * @returns {Response}
 */
function send(op, name, method, path, body, key, expect) {
  return flowRequest({ baseUrl: BASE_URL, op, name, method, path, body, key, expect: EXPECT[expect] })
}

/**
 * Whether this visit's order is one staff deliver: DELIVER_SHARE of the visits, spread evenly over them.
 * @returns {boolean}
 */
function staffDelivers() {
  const visit = exec.scenario.iterationInTest
  return STAFF_KEY !== undefined && Math.floor((visit + 1) * DELIVER_SHARE) > Math.floor(visit * DELIVER_SHARE)
}

/**
 * The page's pets, or a new available pet when the page is empty.
 * @param {number} keyIndex
 * @param {string} key
 * @returns {number | undefined} a pet to order, or undefined when the visit ends here
 */
function browse(keyIndex, key) {
  const page = send("browse", "GET /v1/pets?status=available", "GET", "/pets?status=available&limit=20", null, key, 200)
  if (page.status === 429) {
    holdKey(keyIndex, page)
    return undefined
  }
  const pets = bodyJson(page)
  check(page, {
    "browse: 200 with a page of available pets": (r) =>
      r.status === 200 && isPetArray(pets) &&
      /** @type {Array<Record<string, unknown>>} */ (pets).every((pet) => pet.status === "available")
  })
  if (Array.isArray(pets) && pets.length > 0) {
    const pet = pets[Math.floor(Math.random() * pets.length)]
    return isRecord(pet) && typeof pet.id === "number" ? pet.id : undefined
  }
  if (page.status !== 200) return undefined

  const name = `adoption-${exec.vu.idInTest}-${exec.scenario.iterationInTest}`
  const created = send(
    "restock",
    "POST /v1/pets",
    "POST",
    "/pets",
    { name, categoryId: 1, status: "available" },
    key,
    201
  )
  if (created.status === 429) {
    holdKey(keyIndex, created)
    return undefined
  }
  const pet = bodyJson(created)
  check(created, {
    "restock: 201 with a new available pet": (r) =>
      r.status === 201 && isPet(pet) && isRecord(pet) &&
      pet.name === name && pet.status === "available"
  })
  if (!isRecord(pet) || typeof pet.id !== "number") return undefined
  petsRestocked.add(1)
  return pet.id
}

/**
 * Cancels or delivers the order. A delivery the staff key's quota refuses becomes a cancellation.
 * @param {number} keyIndex
 * @param {string} key the customer's
 * @param {number} orderId
 * @param {number} petId
 * @returns {boolean} whether the order is closed
 */
function close(keyIndex, key, orderId, petId) {
  if (STAFF_KEY !== undefined && staffDelivers() && staff.heldUntil <= Date.now()) {
    const delivered = send(
      "close",
      "POST /v1/store/orders/{orderId}/deliver",
      "POST",
      `/store/orders/${orderId}/deliver`,
      null,
      STAFF_KEY,
      200
    )
    if (delivered.status === 429) {
      staff.heldUntil = Date.now() + (retryAfterSeconds(delivered) || 1) * 1000
    } else {
      const order = bodyJson(delivered)
      const ok = check(delivered, {
        "deliver (staff): 200 with the order delivered": (r) =>
          r.status === 200 && isOrder(order) && isRecord(order) &&
          order.id === orderId && order.petId === petId && order.status === "delivered"
      })
      if (!ok) return false
      ordersDelivered.add(1)
      const pet = send("pet", "GET /v1/pets/{petId}", "GET", `/pets/${petId}`, null, key, 200)
      if (pet.status === 429) holdKey(keyIndex, pet)
      else {
        const body = bodyJson(pet)
        check(pet, {
          "a delivered order's pet is sold": (r) => r.status === 200 && isRecord(body) && body.status === "sold"
        })
      }
      return true
    }
  }
  const cancelled = send(
    "close",
    "POST /v1/store/orders/{orderId}/cancel",
    "POST",
    `/store/orders/${orderId}/cancel`,
    null,
    key,
    200
  )
  if (cancelled.status === 429) {
    holdKey(keyIndex, cancelled)
    return false
  }
  const order = bodyJson(cancelled)
  const ok = check(cancelled, {
    "cancel: 200 with the order cancelled": (r) =>
      r.status === 200 && isOrder(order) && isRecord(order) &&
      order.id === orderId && order.petId === petId && order.status === "cancelled"
  })
  if (ok) ordersCancelled.add(1)
  return ok
}

export function setup() {
  requireKeys(KEYS)
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, RATE * REQUESTS_PER_VISIT, DURATION.seconds)
  if (STAFF_KEY === undefined) {
    console.warn("API_KEY_STAFF is not set: every order is cancelled, none delivered")
  } else {
    warnOnCapacity(verifyKeys(BASE_URL, [STAFF_KEY]), RATE * DELIVER_SHARE, DURATION.seconds)
    verifyStaffKey(BASE_URL, STAFF_KEY, "API_KEY_STAFF")
  }
  // Counters get a sample either way, so their thresholds are judged, and they are shown, on every k6.
  ordersLeftOpen.add(0)
  ordersPlaced.add(0)
  ordersRefused.add(0)
  if (RUSHES > 0) rushesSettled.add(0)
  seedGuards(SETTINGS.guardSeeds)
  seedPets(BASE_URL, KEYS[0] || "", SETTINGS.seedPets)
}

export default function() {
  const keyIndex = pickKey(KEYS)
  if (keyIndex === undefined) {
    throttledByClient.add(1, { op: "browse" })
    rateLimited.add(true, { op: "browse" })
    return
  }
  const key = KEYS[keyIndex] || ""

  const petId = browse(keyIndex, key)
  if (petId === undefined) return

  const placed = send("order", "POST /v1/store/orders", "POST", "/store/orders", { petId }, key, "201|409")
  if (placed.status === 429) {
    holdKey(keyIndex, placed)
    return
  }
  const order = bodyJson(placed)
  check(placed, {
    "order: 201 with the placed order and its Location, or 409 pet_not_available": (r) =>
      (r.status === 201 && isOrder(order) && isRecord(order) && order.petId === petId && order.status === "placed" &&
        header(r, "Location") === `/v1/store/orders/${String(order.id)}`) ||
      (r.status === 409 && isErrorBody(r, "pet_not_available")),
    "order: Stability: beta": (r) => header(r, "Stability") === "beta"
  })
  if (placed.status === 409) ordersRefused.add(1)
  if (placed.status !== 201 || !isRecord(order) || typeof order.id !== "number") return
  ordersPlaced.add(1)
  const orderId = order.id

  const read = send("read", "GET /v1/store/orders/{orderId}", "GET", `/store/orders/${orderId}`, null, key, 200)
  if (read.status === 429) holdKey(keyIndex, read)
  else {
    const body = bodyJson(read)
    check(read, {
      "read: 200 with the order, still placed": (r) =>
        r.status === 200 && isOrder(body) && isRecord(body) &&
        body.id === orderId && body.petId === petId && body.status === "placed"
    })
  }

  if (!close(keyIndex, key, orderId, petId)) ordersLeftOpen.add(1)
}

/**
 * The rush scenario: RUSH_SIZE orders for one new pet at once. Exactly one wins, whatever the timing.
 */
export function rush() {
  const first = exec.scenario.iterationInTest * RUSH_SIZE
  const creator = KEYS[first % KEYS.length] || ""
  const name = `rush-${exec.scenario.iterationInTest}`
  const created = send(
    "rush",
    "POST /v1/pets",
    "POST",
    "/pets",
    { name, categoryId: 1, status: "available" },
    creator,
    201
  )
  if (created.status === 429) return
  const pet = bodyJson(created)
  check(created, { "rush: 201 with a new available pet": (r) => r.status === 201 && isPet(pet) })
  if (!isRecord(pet) || typeof pet.id !== "number") return
  const petId = pet.id

  /** @type {string[]} */
  const keys = []
  for (let i = 0; i < RUSH_SIZE; i++) keys.push(KEYS[(first + i) % KEYS.length] || "")
  const responses = http.batch(keys.map((key) => ({
    method: "POST",
    url: `${BASE_URL}/store/orders`,
    body: JSON.stringify({ petId }),
    params: {
      headers: jsonHeaders(key),
      responseCallback: EXPECT["201|409"],
      tags: { op: "rush", name: "POST /v1/store/orders" }
    }
  })))
  /** @type {Array<{ orderId: number, key: string }>} */
  const winners = []
  let refused = 0
  let limited = 0
  responses.forEach((res, index) => {
    rateLimited.add(res.status === 429, { op: "rush" })
    const order = bodyJson(res)
    if (res.status === 201 && isRecord(order) && typeof order.id === "number") {
      winners.push({ orderId: order.id, key: keys[index] || "" })
    } else if (res.status === 409 && isErrorBody(res, "pet_not_available")) refused += 1
    else if (res.status === 429) limited += 1
  })
  ordersPlaced.add(winners.length)
  ordersRefused.add(refused)
  // A 429 takes a runner out of the race; the others must still have settled it.
  if (limited === RUSH_SIZE) return
  const settled = check(responses, {
    "rush: one order for the pet placed, every other 409 pet_not_available": () =>
      winners.length === 1 && refused + limited === RUSH_SIZE - 1
  })
  if (settled) rushesSettled.add(1)

  for (const winner of winners) {
    const cancelled = send(
      "rush",
      "POST /v1/store/orders/{orderId}/cancel",
      "POST",
      `/store/orders/${winner.orderId}/cancel`,
      null,
      winner.key,
      200
    )
    const order = bodyJson(cancelled)
    const ok = cancelled.status !== 429 && check(cancelled, {
      "rush: the winner cancels, 200 with the order cancelled": (r) =>
        r.status === 200 && isOrder(order) && isRecord(order) &&
        order.id === winner.orderId && order.status === "cancelled"
    })
    if (ok) ordersCancelled.add(1)
    else ordersLeftOpen.add(1)
  }
}
