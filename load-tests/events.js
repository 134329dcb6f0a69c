// @ts-check
/**
 * events.js — events and webhooks (beta, README "Events and webhooks"): how soon a change shows in
 * GET /v1/events, and webhook endpoint management under load.
 *
 *   API_KEYS=psk_a,psk_b API_KEY_STAFF=psk_s WEBHOOK_URL=https://receiver.example/hook k6 run load-tests/events.js
 *
 * The `changes` scenario: each iteration is one story, with one key of API_KEYS (round-robin, as in load.js):
 *   1. the customer creates a pet (POST /v1/pets), and waits for its pet.created;
 *   2. the customer orders it (order.placed, and pet.updated: pending), then cancels it (order.cancelled,
 *      pet.updated: available), or staff deliver it with API_KEY_STAFF (order.delivered, pet.updated: sold);
 *      or, STAFF_ORDER_SHARE of the stories, staff order the pet and cancel the order themselves: the customer
 *      sees the pet's events (pending, then available) and never the staff's order events.
 * After each change the VU polls GET /v1/events with the customer's key by following links (lib/paging.js):
 * every page links on, the end of the log to itself, so a key's walk starts where its last one ended and
 * never reads an event twice, until the change's events appear.
 * `event_lag` is the time from the change's answer to the page that first showed its event (its resolution is
 * POLL_INTERVAL plus a page's round trip). Every change's event must appear exactly once (one event id, never a
 * second event for the same change, no id twice in one walk) with its type and object (the Pet or Order after
 * the change). A customer's pages hold pet events, its own orders' events and its endpoints' test events;
 * the pages of `GET /v1/events?type=…` only that type.
 *
 * The `webhooks` scenario: each iteration is one endpoint's life, with one key of API_KEYS: create (201, the
 * secret `whsec_…` shown this once), list, get (no secret), change the description and event types, disable,
 * enable, rotate the secret (a new one, the old kept 24 h), send a test event (202) and read the delivery
 * attempts until it has one, delete (204), and get it again (404). Setup proves the bound of 10 endpoints a
 * key: it creates, at once, more than the first key has room for; exactly the room left is 201, the rest 400.
 *
 * Endpoints need a URL the server may deliver to: WEBHOOK_URL, a receiver you run that answers 2xx (its
 * test deliveries must then succeed). Without it the endpoints point at https://petstore-load-test.invalid/
 * webhooks, a name that never resolves (RFC 6761 reserves `.invalid`): every delivery fails, nobody receives
 * anything, and the attempts must say so. The server refuses http:// URLs unless it runs with
 * WEBHOOK_ALLOW_HTTP=true, and loopback or private addresses (a receiver on your machine) unless it runs with
 * WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true; test deliveries need a server process with WEBHOOK_DELIVERY on.
 *
 * A 429 makes the VU wait out its Retry-After and send again (up to RETRIES times), so no story leaves an
 * order open and no endpoint is left registered; every 429 counts in rate_limited.
 *
 * Environment:
 *   BASE_URL           API address including /v1 (default http://localhost:8080/v1)
 *   API_KEYS           comma-separated customer keys, required
 *   API_KEY_STAFF      a staff key (README "Roles"), for deliveries and staff orders; without it every order is
 *                      the customer's, and cancelled
 *   WEBHOOK_URL        the receiver of the endpoints (default: https://petstore-load-test.invalid/webhooks)
 *   RATE               stories per second (default 1)
 *   DURATION           how long (default 60s)
 *   VUS, MAX_VUS       pre-allocated and maximum VUs of the stories (default 5 and 30)
 *   DELIVER_SHARE      share of the customers' orders staff deliver, 0 to 1 (default 0.3)
 *   STAFF_ORDER_SHARE  share of the stories in which staff order the pet, 0 to 1 (default 0.2)
 *   POLL_INTERVAL      seconds between polls of GET /v1/events (default 0.1)
 *   EVENT_TIMEOUT      seconds a change's events may take to appear before they count as missing (default 10)
 *   PAGE_SIZE          events a page, 1 to 100 (default 100)
 *   LAG_P95_MS         p95 of event_lag (default 1000)
 *   WEBHOOK_RATE       endpoint lives a minute, 0 for none (default 20)
 *   WEBHOOK_MAX_VUS    most endpoint lives at once (default 4); every key needs that much room under its 10
 *   ATTEMPT_TIMEOUT    seconds a test event may take to show an attempt (default 15)
 *   RETRIES            times a request refused for quota is sent again after its Retry-After (default 2)
 *   P95_MS, P99_MS     latency of every served request (defaults 250 and 500)
 *   MAX_ERROR_RATE     share of failed requests allowed (default 0): any status a step does not expect, 429 apart
 *   MAX_429_RATE       share of requests refused for quota allowed (default 0.02)
 */
import http from "k6/http"
import exec from "k6/execution"
import { check, sleep } from "k6"
import { Counter, Trend } from "k6/metrics"
import { requireKeys } from "./lib/config.js"
import { eventsSettings } from "./lib/options.js"
import {
  firstEventsPage,
  linksOnAsPromised,
  readOn,
  setupData,
  startFromSetup,
  typeWalkStart,
  walkStart
} from "./lib/paging.js"
import {
  MAX_WEBHOOK_ENDPOINTS,
  bodyJson,
  header,
  isErrorBody,
  isEvent,
  isOrder,
  isPet,
  isRecord,
  isTimestamp,
  isWebhookAttempt,
  isWebhookEndpoint,
  isWebhookSecret,
  jsonHeaders,
  nextLink
} from "./lib/api.js"
import {
  flowRequestHonouringRetryAfter,
  pickKey,
  rateLimited,
  throttledByClient,
  verifyKeys,
  verifyStaffKey,
  warnOnCapacity
} from "./lib/traffic.js"
/** @import { Response } from "k6/http" */

const SETTINGS = eventsSettings()
const BASE_URL = SETTINGS.baseUrl
const KEYS = SETTINGS.keys
const STAFF_KEY = SETTINGS.staffKey
const WEBHOOK_URL = SETTINGS.webhookUrl
const RECEIVER = SETTINGS.receiver
const RATE = SETTINGS.rate
const DURATION = SETTINGS.duration
const DELIVER_SHARE = SETTINGS.deliverShare
const STAFF_ORDER_SHARE = SETTINGS.staffOrderShare
const POLL_INTERVAL = SETTINGS.pollInterval
const EVENT_TIMEOUT = SETTINGS.eventTimeout
const PAGE_SIZE = SETTINGS.pageSize
const WEBHOOK_RATE = SETTINGS.webhookRate
const WEBHOOK_MAX_VUS = SETTINGS.webhookMaxVus
const ATTEMPT_TIMEOUT = SETTINGS.attemptTimeout
const RETRIES = SETTINGS.retries

/**
 * Requests of a story (three changes, at least one poll after each, one walk by type, the odd second page) and
 * of an endpoint's life (eleven steps, the attempts read once or twice), for the capacity warning.
 */
const REQUESTS_PER_STORY = 8
const REQUESTS_PER_LIFE = 12

const eventLag = new Trend("event_lag", true)
const eventsSeen = new Counter("events_seen")
const eventsMissing = new Counter("events_missing")
const eventsDuplicated = new Counter("events_duplicated")
/** Order events a customer's key was shown that are not its own: the staff's orders of this VU's stories. */
const eventsForeign = new Counter("events_foreign")
const ordersLeftOpen = new Counter("orders_left_open")
const webhookLives = new Counter("webhook_endpoint_lives")
const endpointsLeft = new Counter("webhook_endpoints_left")
const testsUnattempted = new Counter("webhook_tests_unattempted")
const testAttemptLag = new Trend("webhook_test_attempt_lag", true)

// One callback per set of expected statuses, made in the init context; 429 is always expected.
const EXPECT = {
  200: http.expectedStatuses(200, 429),
  201: http.expectedStatuses(201, 429),
  202: http.expectedStatuses(202, 429),
  204: http.expectedStatuses(204, 429),
  404: http.expectedStatuses(404, 429),
  "201|400": http.expectedStatuses(201, 400)
}

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

/**
 * A request of a step, which waits out a 429 (lib/traffic.js).
 * @param {string} op the step, the `op` tag
 * @param {string} name the route
 * @param {string} method
 * @param {string} path under BASE_URL, or a `Link` target
 * @param {unknown} body sent as JSON, or null
 * @param {string} key
 * @param {keyof typeof EXPECT} expect
 * @param {number} [keyIndex] the key's index in API_KEYS
 * @returns {Response}
 */
function send(op, name, method, path, body, key, expect, keyIndex) {
  return flowRequestHonouringRetryAfter(
    { baseUrl: BASE_URL, op, name, method, path, body, key, expect: EXPECT[expect] },
    RETRIES,
    keyIndex
  )
}

/**
 * @param {Response} res
 * @returns {boolean} whether the answer says its operation is beta
 */
function beta(res) {
  return header(res, "Stability") === "beta"
}

// ---------------------------------------------------------------------------------------------------------
// Events

/**
 * @typedef {object} Watch a change whose event a VU waits for
 * @property {string} type the event type
 * @property {Record<string, unknown>} data fields the event's `data` must have: the object after the change
 * @property {string | undefined} eventId the event's id, once it appeared
 * @property {number | undefined} seenAt when (Unix ms) the page that showed it arrived
 */

/** Per-VU state: k6 gives every VU its own copy. */
const log = {
  /** @type {Record<number, string>} per key: where its next walk starts, the last page's link */
  cursors: {},
  /** @type {Record<number, Record<string, boolean>>} per key: the ids of its last walk, none of which may show again */
  lastWalk: {},
  /** @type {string | undefined} where every key's first walk starts, from setup */
  start: undefined,
  /** @type {Record<string, Watch>} by `type id status` */
  watches: {},
  /** @type {string[]} the watches' keys, oldest first: the oldest are dropped past 500 */
  order: [],
  /** @type {Record<number, boolean>} ids of orders the staff key placed in this VU's stories */
  staffOrders: {}
}

/**
 * @param {string} type
 * @param {unknown} data
 * @returns {string} the key of the change an event describes: its type, object and the object's status
 */
function changeKey(type, data) {
  return isRecord(data) ? `${type} ${String(data.id)} ${String(data.status)}` : type
}

/**
 * One event of a walk the VU had not seen: a watched change's, a duplicate of one, or another's.
 * @param {unknown} event
 * @param {number} at when its page arrived
 */
function observe(event, at) {
  if (!isRecord(event) || typeof event.type !== "string" || typeof event.id !== "string") return
  const data = event.data
  if (event.type.indexOf("order.") === 0 && isRecord(data) && typeof data.id === "number" && log.staffOrders[data.id]) {
    eventsForeign.add(1)
    check(event, { "events: a customer's key is not shown the staff's order events": () => false })
  }
  const watch = log.watches[changeKey(event.type, data)]
  if (watch === undefined) return
  if (watch.eventId === undefined) {
    watch.eventId = event.id
    watch.seenAt = at
    check(event, {
      "events: a change's event has its type and the object after the change": () =>
        isRecord(data) &&
        Object.keys(watch.data).every((field) => data[field] === watch.data[field])
    })
  } else if (watch.eventId !== event.id) {
    eventsDuplicated.add(1)
    check(event, { "events: a change has one event": () => false })
  }
}

/**
 * Reads the key's events from where its last walk ended to the end of the log, following each page's link.
 * The last page's link is where the next walk starts: no event is read twice.
 * @param {number} keyIndex
 * @returns {boolean} whether every page came, with its link
 */
function walk(keyIndex) {
  const key = KEYS[keyIndex] || ""
  const before = log.lastWalk[keyIndex] || {}
  /** @type {Record<string, boolean>} */
  const inWalk = {}
  let url = walkStart(log.cursors[keyIndex] || log.start, PAGE_SIZE)
  for (;;) {
    const res = send("events", "GET /v1/events", "GET", url, null, key, 200, keyIndex)
    if (res.status !== 200) return false
    const at = Date.now()
    const events = bodyJson(res)
    const next = nextLink(res)
    const count = Array.isArray(events) ? events.length : 0
    check(res, {
      "events: 200 with a page of events, oldest first": (r) =>
        r.status === 200 && Array.isArray(events) &&
        events.length <= PAGE_SIZE && events.every(isEvent),
      "events: Stability: beta": beta,
      "events: every page links on (limit kept, a new cursor), the end of the log to itself": () =>
        next !== undefined && /^https?:\/\/[^?]+\/v1\/events\?/.test(next) && linksOnAsPromised(url, count, next)
    })
    if (!Array.isArray(events)) return false
    for (const event of events) {
      const id = isRecord(event) && typeof event.id === "string" ? event.id : ""
      if (inWalk[id] || before[id]) {
        eventsDuplicated.add(1)
        check(event, { "events: following links shows every event once": () => false })
      }
      inWalk[id] = true
      observe(event, at)
    }
    const position = readOn(count, PAGE_SIZE, next)
    if (position === undefined) return false
    log.cursors[keyIndex] = position.url
    if (position.atEnd) {
      log.lastWalk[keyIndex] = inWalk
      return true
    }
    url = position.url
  }
}

/**
 * Reads the key's events of one type from `from` (a position at or before the event) to the end: every page
 * holds that type alone, and the event once.
 * @param {number} keyIndex
 * @param {string | undefined} from a link of an earlier walk (no type), or undefined for the beginning
 * @param {string} type
 * @param {string} eventId
 */
function walkType(keyIndex, from, type, eventId) {
  let url = typeWalkStart(from, PAGE_SIZE, type)
  let times = 0
  for (;;) {
    const res = send("events", "GET /v1/events?type", "GET", url, null, KEYS[keyIndex] || "", 200, keyIndex)
    const events = bodyJson(res)
    if (
      !check(res, {
        "events?type: 200 with a page of that type alone": (r) =>
          r.status === 200 && Array.isArray(events) &&
          events.every((event) => isEvent(event) && event.type === type)
      }) || !Array.isArray(events)
    ) return
    times += events.filter((event) => event.id === eventId).length
    const next = nextLink(res)
    check(res, {
      "events?type: every page links on, keeping the type": () => linksOnAsPromised(url, events.length, next)
    })
    const position = readOn(events.length, PAGE_SIZE, next)
    if (position === undefined || position.atEnd) break
    url = position.url
  }
  check(times, { "events?type: shows the change's event once": (n) => n === 1 })
}

/**
 * Watches the events of a change, polls the key's events until they all appeared or EVENT_TIMEOUT passed,
 * and records their lag from `since`.
 * @param {number} keyIndex the key whose events show the change
 * @param {number} since when (Unix ms) the change's answer came
 * @param {Array<{ type: string, data: Record<string, unknown> }>} expected
 * @returns {Watch[]} the watches, with the events' ids when they appeared
 */
function awaitEvents(keyIndex, since, expected) {
  /** @type {Watch[]} */
  const watches = expected.map((event) => {
    const key = changeKey(event.type, event.data)
    /** @type {Watch} */
    const watch = { type: event.type, data: event.data, eventId: undefined, seenAt: undefined }
    log.watches[key] = watch
    log.order.push(key)
    return watch
  })
  while (log.order.length > 500) delete log.watches[log.order.shift() || ""]
  const deadline = since + EVENT_TIMEOUT * 1000
  for (;;) {
    const walked = walk(keyIndex)
    if (!walked || watches.every((watch) => watch.eventId !== undefined) || Date.now() >= deadline) break
    sleep(POLL_INTERVAL)
  }
  for (const watch of watches) {
    if (watch.seenAt === undefined) {
      eventsMissing.add(1, { type: watch.type })
    } else {
      eventsSeen.add(1, { type: watch.type })
      eventLag.add(watch.seenAt - since, { type: watch.type })
    }
  }
  check(watches, {
    "events: every change's events appear within EVENT_TIMEOUT": (all) =>
      all.every((watch) => watch.eventId !== undefined)
  })
  return watches
}

/**
 * Whether this story's pet is one staff order, or whether staff deliver the customer's order: each share of
 * the stories spread evenly over them.
 * @param {number} share
 * @returns {boolean}
 */
function spread(share) {
  const story = exec.scenario.iterationInTest
  return STAFF_KEY !== undefined && Math.floor((story + 1) * share) > Math.floor(story * share)
}

/**
 * @param {Response} res
 * @returns {Record<string, unknown> | undefined} the body when it is an Order
 */
function orderOf(res) {
  const order = bodyJson(res)
  return isOrder(order) && isRecord(order) ? order : undefined
}

export function setup() {
  requireKeys(KEYS)
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, RATE * REQUESTS_PER_STORY + (WEBHOOK_RATE * REQUESTS_PER_LIFE) / 60, DURATION.seconds)
  if (STAFF_KEY === undefined) {
    console.warn("API_KEY_STAFF is not set: every order is the customer's, and cancelled")
  } else {
    verifyKeys(BASE_URL, [STAFF_KEY])
    verifyStaffKey(BASE_URL, STAFF_KEY, "API_KEY_STAFF")
  }
  // Counters get a sample either way, so their thresholds are judged, and they are shown, on every k6.
  for (const counter of [eventsSeen, eventsMissing, eventsDuplicated, eventsForeign, ordersLeftOpen]) counter.add(0)
  // …and each type's, so a type whose events never came fails its guard (lib/options.js sampleGuards).
  for (const tags of SETTINGS.guardSeeds) eventsSeen.add(0, tags)
  if (WEBHOOK_RATE > 0) {
    for (const counter of [webhookLives, endpointsLeft, testsUnattempted]) counter.add(0)
    endpointBound()
  }
  // Through JSON to the VUs: no resume point is null, never undefined (lib/paging.js).
  return setupData(logEnd())
}

/**
 * Walks the log to its end once, with the first key: the runs' walks start at its last link, not at the
 * beginning of 30 days of events.
 * @returns {string} the link of the end of the log
 */
function logEnd() {
  let url = firstEventsPage(PAGE_SIZE)
  for (;;) {
    const res = send("events", "GET /v1/events", "GET", url, null, KEYS[0] || "", 200)
    const events = bodyJson(res)
    if (res.status !== 200 || !Array.isArray(events)) {
      exec.test.abort(`setup could not read GET /v1/events: ${res.status} ${String(res.body)}`)
    }
    const position = readOn(Array.isArray(events) ? events.length : 0, PAGE_SIZE, nextLink(res))
    if (position === undefined) exec.test.abort(`GET ${url}: a page of events without a rel="next" Link`)
    else if (position.atEnd) return position.url
    else url = position.url
  }
}

/**
 * The changes scenario: one story of a pet and its order, each change followed until its events appear.
 * @param {unknown} data setup's, through JSON: `{ start }`, a resume point or null
 */
export function changes(data) {
  if (log.start === undefined) log.start = startFromSetup(data)
  const keyIndex = pickKey(KEYS)
  if (keyIndex === undefined) {
    throttledByClient.add(1, { op: "pet" })
    rateLimited.add(true, { op: "pet" })
    return
  }
  const key = KEYS[keyIndex] || ""
  const name = `events-${exec.vu.idInTest}-${exec.scenario.iterationInTest}`
  const created = send(
    "pet",
    "POST /v1/pets",
    "POST",
    "/pets",
    { name, categoryId: 1, status: "available" },
    key,
    201,
    keyIndex
  )
  const pet = bodyJson(created)
  if (
    !check(created, { "pet: 201 with a new available pet": (r) => r.status === 201 && isPet(pet) }) || !isRecord(pet)
  ) return
  const petId = pet.id
  awaitEvents(keyIndex, Date.now(), [{ type: "pet.created", data: { id: petId, name, status: "available" } }])

  if (spread(STAFF_ORDER_SHARE) && STAFF_KEY !== undefined) {
    // Staff order the customer's pet: the customer sees the pet's events, never the order's.
    const placed = send("order", "POST /v1/store/orders", "POST", "/store/orders", { petId }, STAFF_KEY, 201)
    const order = orderOf(placed)
    if (
      !check(placed, {
        "order (staff): 201 with the placed order": () => placed.status === 201 && order !== undefined
      }) || order === undefined
    ) return
    log.staffOrders[Number(order.id)] = true
    awaitEvents(keyIndex, Date.now(), [{ type: "pet.updated", data: { id: petId, status: "pending" } }])
    const cancelled = send(
      "close",
      "POST /v1/store/orders/{orderId}/cancel",
      "POST",
      `/store/orders/${String(order.id)}/cancel`,
      null,
      STAFF_KEY,
      200
    )
    const closed = orderOf(cancelled)
    if (
      !check(cancelled, {
        "cancel (staff): 200 with the order cancelled": () => closed !== undefined && closed.status === "cancelled"
      })
    ) {
      ordersLeftOpen.add(1)
      return
    }
    awaitEvents(keyIndex, Date.now(), [{ type: "pet.updated", data: { id: petId, status: "available" } }])
    return
  }

  const placed = send("order", "POST /v1/store/orders", "POST", "/store/orders", { petId }, key, 201, keyIndex)
  const order = orderOf(placed)
  if (
    !check(placed, {
      "order: 201 with the placed order": () => placed.status === 201 && order !== undefined && order.petId === petId
    }) ||
    order === undefined
  ) return
  const orderId = order.id
  awaitEvents(keyIndex, Date.now(), [
    { type: "order.placed", data: { id: orderId, petId, status: "placed" } },
    { type: "pet.updated", data: { id: petId, status: "pending" } }
  ])

  const deliver = spread(DELIVER_SHARE) && STAFF_KEY !== undefined
  const status = deliver ? "delivered" : "cancelled"
  const closed = deliver
    ? send(
      "close",
      "POST /v1/store/orders/{orderId}/deliver",
      "POST",
      `/store/orders/${String(orderId)}/deliver`,
      null,
      STAFF_KEY || "",
      200
    )
    : send(
      "close",
      "POST /v1/store/orders/{orderId}/cancel",
      "POST",
      `/store/orders/${String(orderId)}/cancel`,
      null,
      key,
      200,
      keyIndex
    )
  const after = orderOf(closed)
  if (
    !check(closed, {
      [`close: 200 with the order ${status}`]: () =>
        after !== undefined && after.id === orderId && after.status === status
    })
  ) {
    ordersLeftOpen.add(1)
    return
  }
  const from = log.cursors[keyIndex] || log.start
  const closing = awaitEvents(keyIndex, Date.now(), [
    { type: `order.${status}`, data: { id: orderId, petId, status } },
    { type: "pet.updated", data: { id: petId, status: deliver ? "sold" : "available" } }
  ])[0]
  // The same event through the type filter, from where the walks were before it.
  if (closing !== undefined && closing.eventId !== undefined) walkType(keyIndex, from, closing.type, closing.eventId)
}

// ---------------------------------------------------------------------------------------------------------
// Webhook endpoints

/** The endpoint a life creates: one key's orders, at WEBHOOK_URL. */
const NEW_ENDPOINT_TYPES = ["order.placed"]
const CHANGED_ENDPOINT_TYPES = ["order.placed", "order.cancelled", "order.delivered"]

/**
 * @param {Response} res
 * @returns {Record<string, unknown> | undefined} the body when it is a WebhookEndpoint (without its secret)
 */
function endpointOf(res) {
  const endpoint = bodyJson(res)
  return isWebhookEndpoint(endpoint) && isRecord(endpoint) ? endpoint : undefined
}

/**
 * @param {unknown} list
 * @returns {boolean} whether list is the key's endpoints: WebhookEndpoints, oldest first, at most 10
 */
function isEndpointList(list) {
  return Array.isArray(list) && list.length <= MAX_WEBHOOK_ENDPOINTS &&
    list.every((endpoint) => isWebhookEndpoint(endpoint)) &&
    list.every((endpoint, i) => i === 0 || String(endpoint.createdAt) >= String(list[i - 1].createdAt))
}

/**
 * Setup's proof of the bound: room + 3 endpoints created at once for the first key, of which exactly the
 * room it had left are 201 and the others 400; then every one of them deleted. Aborts when a key has not room
 * for WEBHOOK_MAX_VUS endpoints.
 */
function endpointBound() {
  /** @type {number[]} */
  const existing = KEYS.map((key, index) => {
    const res = send("setup", "GET /v1/webhooks/endpoints", "GET", "/webhooks/endpoints", null, key, 200)
    const list = bodyJson(res)
    if (res.status !== 200 || !Array.isArray(list)) {
      exec.test.abort(`key #${index + 1} of API_KEYS cannot list its webhook endpoints: ${res.status}`)
    }
    const count = Array.isArray(list) ? list.length : 0
    if (count + WEBHOOK_MAX_VUS > MAX_WEBHOOK_ENDPOINTS) {
      exec.test.abort(
        `key #${index + 1} of API_KEYS has ${count} webhook endpoints: the run needs room for WEBHOOK_MAX_VUS ` +
          `(${WEBHOOK_MAX_VUS}) under the bound of ${MAX_WEBHOOK_ENDPOINTS}; delete some, or use another key`
      )
    }
    return count
  })
  const key = KEYS[0] || ""
  const room = MAX_WEBHOOK_ENDPOINTS - (existing[0] || 0)
  const responses = http.batch(Array.from({ length: room + 3 }, (_, i) => ({
    method: "POST",
    url: `${BASE_URL}/webhooks/endpoints`,
    body: JSON.stringify({ url: WEBHOOK_URL, eventTypes: ["webhook.test"], description: `k6 events.js bound ${i}` }),
    params: {
      headers: jsonHeaders(key),
      responseCallback: EXPECT["201|400"],
      tags: { op: "setup", name: "POST /v1/webhooks/endpoints" }
    }
  })))
  /** @type {string[]} */
  const created = []
  let refused = 0
  for (const res of responses) {
    const body = bodyJson(res)
    if (res.status === 201 && isRecord(body) && typeof body.id === "string") created.push(body.id)
    // The bound's 400 names no field: the Error body without `details`.
    else if (
      res.status === 400 && isRecord(body) && body.code === "invalid_request" && body.status === 400 &&
      /at most 10 webhook endpoints/.test(String(body.message))
    ) refused += 1
  }
  const full = send("setup", "GET /v1/webhooks/endpoints", "GET", "/webhooks/endpoints", null, key, 200)
  const list = bodyJson(full)
  check(responses, {
    "bound: of endpoints created at once, exactly the room under 10 are 201, the others 400": () =>
      created.length === room && refused === 3,
    "bound: the key then lists 10 endpoints": () =>
      isEndpointList(list) && Array.isArray(list) && list.length === MAX_WEBHOOK_ENDPOINTS
  })
  if (created.length > 0 && STAFF_KEY !== undefined) {
    const other = send(
      "setup",
      "GET /v1/webhooks/endpoints/{endpointId}",
      "GET",
      `/webhooks/endpoints/${created[0]}`,
      null,
      STAFF_KEY,
      404
    )
    check(other, {
      "bound: another key's endpoint is 404, even to staff": (r) => r.status === 404 && isErrorBody(r, "not_found")
    })
  }
  for (const id of created) {
    const gone = send(
      "setup",
      "DELETE /v1/webhooks/endpoints/{endpointId}",
      "DELETE",
      `/webhooks/endpoints/${id}`,
      null,
      key,
      204
    )
    if (!check(gone, { "bound: each deleted, 204": (r) => r.status === 204 })) endpointsLeft.add(1)
  }
}

/**
 * One step of an endpoint's life on its endpoint: the request, and whether its answer passed its checks.
 * @param {string} op
 * @param {string} method
 * @param {string} route the name, after /v1/webhooks/endpoints/{endpointId}
 * @param {string} id
 * @param {unknown} body
 * @param {string} key
 * @param {number} keyIndex
 * @param {keyof typeof EXPECT} expect
 * @returns {Response}
 */
function endpointStep(op, method, route, id, body, key, keyIndex, expect) {
  return send(
    op,
    `${method} /v1/webhooks/endpoints/{endpointId}${route}`,
    method,
    `/webhooks/endpoints/${id}${route}`,
    body,
    key,
    expect,
    keyIndex
  )
}

/**
 * The webhooks scenario: one endpoint's life, from its creation to its deletion.
 */
export function webhooks() {
  const keyIndex = pickKey(KEYS)
  if (keyIndex === undefined) {
    throttledByClient.add(1, { op: "endpoint" })
    rateLimited.add(true, { op: "endpoint" })
    return
  }
  const key = KEYS[keyIndex] || ""
  const description = `k6 events.js ${exec.vu.idInTest}-${exec.scenario.iterationInTest}`
  const res = send(
    "endpoint",
    "POST /v1/webhooks/endpoints",
    "POST",
    "/webhooks/endpoints",
    { url: WEBHOOK_URL, eventTypes: NEW_ENDPOINT_TYPES, description },
    key,
    201,
    keyIndex
  )
  const created = bodyJson(res)
  const ok = check(res, {
    "create: 201 with the endpoint and its secret whsec_…, shown once": (r) =>
      r.status === 201 && isWebhookEndpoint(created, true) &&
      isRecord(created) && created.url === WEBHOOK_URL && created.description === description &&
      created.enabled === true &&
      created.disabledReason === null && JSON.stringify(created.eventTypes) === JSON.stringify(NEW_ENDPOINT_TYPES),
    "create: Stability: beta": beta
  })
  if (!ok || !isRecord(created) || typeof created.id !== "string") return
  const id = created.id
  const lived = live(id, String(created.secret), description, key, keyIndex)
  const gone = endpointStep("endpoint", "DELETE", "", id, null, key, keyIndex, 204)
  if (!check(gone, { "delete: 204, no body": (r) => r.status === 204 && (r.body === null || r.body === "") })) {
    endpointsLeft.add(1)
    return
  }
  const after = endpointStep("endpoint", "GET", "", id, null, key, keyIndex, 404)
  check(after, { "get after delete: 404 not_found": (r) => r.status === 404 && isErrorBody(r, "not_found") })
  if (lived) webhookLives.add(1)
}

/**
 * The steps between an endpoint's creation and its deletion.
 * @param {string} id
 * @param {string} secret the creation's
 * @param {string} description
 * @param {string} key
 * @param {number} keyIndex
 * @returns {boolean} whether every step passed
 */
function live(id, secret, description, key, keyIndex) {
  const listed = send("endpoint", "GET /v1/webhooks/endpoints", "GET", "/webhooks/endpoints", null, key, 200, keyIndex)
  const list = bodyJson(listed)
  if (
    !check(listed, {
      "list: 200 with the key's endpoints, oldest first, at most 10, no secrets, this one among them": (r) =>
        r.status === 200 &&
        isEndpointList(list) && Array.isArray(list) && list.some((endpoint) => endpoint.id === id)
    })
  ) return false

  const got = endpointStep("endpoint", "GET", "", id, null, key, keyIndex, 200)
  const endpoint = endpointOf(got)
  if (
    !check(got, {
      "get: 200 with the endpoint, no secret": () =>
        endpoint !== undefined && endpoint.id === id && endpoint.description === description
    })
  ) return false

  const changed = endpointStep(
    "endpoint",
    "PATCH",
    "",
    id,
    { description: `${description} changed`, eventTypes: CHANGED_ENDPOINT_TYPES },
    key,
    keyIndex,
    200
  )
  const after = endpointOf(changed)
  if (
    !check(changed, {
      "change: 200 with the new description and event types, the rest kept": () =>
        after !== undefined && after.id === id &&
        after.description === `${description} changed` &&
        JSON.stringify(after.eventTypes) === JSON.stringify(CHANGED_ENDPOINT_TYPES) &&
        after.url === WEBHOOK_URL && after.enabled === true
    })
  ) return false

  for (const enabled of [false, true]) {
    const toggled = endpointStep("endpoint", "PATCH", "", id, { enabled }, key, keyIndex, 200)
    const body = endpointOf(toggled)
    if (
      !check(toggled, {
        [`${enabled ? "enable" : "disable"}: 200 with enabled ${String(enabled)}`]: () =>
          body !== undefined && body.enabled === enabled &&
          body.disabledReason === null && body.description === `${description} changed`
      })
    ) return false
  }

  const rotated = endpointStep("endpoint", "POST", "/rotate-secret", id, null, key, keyIndex, 200)
  const rotation = bodyJson(rotated)
  if (
    !check(rotated, {
      "rotate: 200 with a new secret; the old one signs for 24 hours more": (r) =>
        r.status === 200 && isRecord(rotation) &&
        Object.keys(rotation).length === 2 && isWebhookSecret(rotation.secret) && rotation.secret !== secret &&
        isTimestamp(rotation.previousSecretExpiresAt) &&
        Math.abs(
            Date.parse(String(rotation.previousSecretExpiresAt)) - Date.parse(header(r, "Date") || "") -
              24 * 3600 * 1000
          ) < 120 * 1000
    })
  ) return false

  const tested = endpointStep("endpoint", "POST", "/test", id, null, key, keyIndex, 202)
  const queued = bodyJson(tested)
  if (
    !check(tested, {
      "test: 202 with the queued event's id": (r) =>
        r.status === 202 && isRecord(queued) && Object.keys(queued).length === 1 &&
        typeof queued.eventId === "string" && /^evt_[0-9a-f]{32}$/.test(queued.eventId)
    }) || !isRecord(queued)
  ) return false
  return attempted(id, String(queued.eventId), key, keyIndex)
}

/**
 * Reads the endpoint's attempts until the test event has one, or ATTEMPT_TIMEOUT passed. With WEBHOOK_URL the
 * receiver answers 2xx: the attempt succeeded; without, the name never resolves: it failed, with no status.
 * @param {string} id
 * @param {string} eventId
 * @param {string} key
 * @param {number} keyIndex
 * @returns {boolean}
 */
function attempted(id, eventId, key, keyIndex) {
  const since = Date.now()
  for (;;) {
    const res = endpointStep("attempts", "GET", "/attempts", id, null, key, keyIndex, 200)
    const attempts = bodyJson(res)
    if (
      !check(res, {
        // Newest recorded first: an attempt is recorded when it ends, so attemptedAt (its start) need not descend.
        "attempts: 200 with the latest attempts": (r) =>
          r.status === 200 && Array.isArray(attempts) &&
          attempts.length <= 100 && attempts.every(isWebhookAttempt)
      }) || !Array.isArray(attempts)
    ) return false
    const first = attempts.filter((attempt) => attempt.eventId === eventId && attempt.attempt === 1)[0]
    if (first !== undefined) {
      testAttemptLag.add(Date.now() - since)
      return check(first, {
        [
          RECEIVER
            ? "attempts: the test event reached WEBHOOK_URL, 2xx"
            : "attempts: the test event failed, as no receiver exists"
        ]: (attempt) =>
          RECEIVER
            ? attempt.outcome === "succeeded" && attempt.statusCode >= 200 && attempt.statusCode < 300 &&
              attempt.error === null
            : attempt.outcome === "failed" && attempt.statusCode === null && typeof attempt.error === "string"
      })
    }
    if (Date.now() - since >= ATTEMPT_TIMEOUT * 1000) {
      testsUnattempted.add(1)
      return false
    }
    sleep(0.5)
  }
}
