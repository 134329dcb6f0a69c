// @ts-check
/**
 * The mixed traffic of load.js, stress.js and soak.js: one request per iteration, about 80% listPets,
 * 15% createPet and 5% getPet (MIX), spread round-robin over the keys of API_KEYS.
 *
 * Each VU honours Retry-After per key: after a 429 it leaves that key alone until the key's window resets,
 * so a run short of quota is reported as rate limited instead of getting its keys banned.
 *
 * Also the requests of the flows (adoption.js, events.js): one step each, tagged, counted and timed alike.
 */
import http from "k6/http"
import exec from "k6/execution"
import { check, sleep } from "k6"
import { Counter, Rate, Trend } from "k6/metrics"
import {
  PET_STATUSES,
  authHeaders,
  bodyJson,
  header,
  isId,
  isPet,
  isPetArray,
  isRecord,
  jsonHeaders,
  nextLink,
  retryAfterSeconds
} from "./api.js"
import { SERVED_REQUESTS } from "./options.js"
/** @import { Response } from "k6/http" */

/** Duration of every answered request that was not a 429: the latency the thresholds judge. */
export const servedDuration = new Trend("served_req_duration", true)
/**
 * Every sample of served_req_duration, counted with the same tags: the guards of its sub-metrics, which k6
 * would pass with no sample at all (lib/options.js sampleGuards).
 */
export const servedRequests = new Counter(SERVED_REQUESTS)
/** Share of iterations refused for quota: a 429, or no key of API_KEYS left with quota for this VU. */
export const rateLimited = new Rate("rate_limited")
/** Iterations that sent nothing because every key was waiting out a Retry-After in this VU. */
export const throttledByClient = new Counter("client_throttled")

/** Per-VU state: k6 gives every VU its own copy of the modules. */
const state = {
  /** @type {number[]} ids of pets this VU created */
  ids: [],
  /** @type {string | undefined} the next page of the list this VU is walking */
  next: undefined,
  /** @type {Record<number, number>} key index → Unix ms until which the key is rate limited */
  limitedUntil: {}
}

/**
 * A served answer: its latency, and one more sample for the guards of the sub-metrics it falls in.
 * @param {Response} res
 * @param {Record<string, string>} tags
 */
function served(res, tags) {
  servedDuration.add(res.timings.duration, tags)
  servedRequests.add(1, tags)
}

/**
 * Seeds each guard with 0 (in setup), so that k6 judges it even when its operation never happened.
 * @param {Array<Record<string, string>>} seeds the tags of each guard, from the script's settings
 */
export function seedGuards(seeds) {
  for (const tags of seeds) servedRequests.add(0, tags)
}

/**
 * The key for this iteration: round-robin over all iterations of the scenario, skipping keys this VU saw
 * refused and whose Retry-After has not run out.
 * @param {string[]} keys
 * @returns {number | undefined} an index into keys
 */
export function pickKey(keys) {
  const now = Date.now()
  const first = exec.scenario.iterationInTest % keys.length
  for (let step = 0; step < keys.length; step++) {
    const index = (first + step) % keys.length
    const until = state.limitedUntil[index]
    if (until === undefined || until <= now) return index
  }
  return undefined
}

/**
 * After a 429: this VU leaves the key alone until its Retry-After has run out.
 * @param {number} keyIndex the key's index, as pickKey returned it
 * @param {Response} res the 429
 */
export function holdKey(keyIndex, res) {
  state.limitedUntil[keyIndex] = Date.now() + (retryAfterSeconds(res) || 1) * 1000
}

/**
 * @typedef {object} FlowRequest
 * @property {string} baseUrl BASE_URL
 * @property {string} op the step, the `op` tag of the request and of its metrics
 * @property {string} name the route, the request's `name` tag
 * @property {string} method
 * @property {string} path under baseUrl, or an absolute URL (a `Link` target)
 * @property {unknown} [body] sent as JSON; none when left out or null
 * @property {string} key the API key
 * @property {ReturnType<typeof http.expectedStatuses>} expect the statuses the step expects (429 among them)
 */

/**
 * One request of a flow: tagged with its step and route, counted in rate_limited, and its latency
 * recorded in served_req_duration unless it was refused for quota.
 * @param {FlowRequest} request
 * @returns {Response}
 */
export function flowRequest(request) {
  const body = request.body === undefined || request.body === null ? null : JSON.stringify(request.body)
  const url = /^https?:\/\//.test(request.path) ? request.path : request.baseUrl + request.path
  const res = http.request(request.method, url, body, {
    headers: body === null ? authHeaders(request.key) : jsonHeaders(request.key),
    responseCallback: request.expect,
    tags: { op: request.op, name: request.name }
  })
  rateLimited.add(res.status === 429, { op: request.op })
  if (res.status !== 429 && res.status !== 0) served(res, { op: request.op })
  return res
}

/**
 * A flow request that waits out a 429: the VU sleeps the answer's Retry-After (the key's window reset) and
 * sends again, at most `retries` times, for the steps a flow cannot leave half done (an endpoint left
 * registered, an order left open). Every 429 is counted in rate_limited, as the README promises a client
 * that honours Retry-After is refused at most once a window.
 * @param {FlowRequest} request
 * @param {number} retries
 * @param {number} [keyIndex] the key's index in the keys pickKey chose it from: held after a 429 (holdKey)
 * @returns {Response} the last answer: a 429 only when every retry was refused too
 */
export function flowRequestHonouringRetryAfter(request, retries, keyIndex) {
  let res = flowRequest(request)
  for (let retry = 0; retry < retries && res.status === 429; retry++) {
    if (keyIndex !== undefined) holdKey(keyIndex, res)
    sleep(retryAfterSeconds(res) || 1)
    res = flowRequest(request)
  }
  return res
}

/**
 * @param {number[]} seedIds ids every VU may fetch (created in setup)
 * @returns {number | undefined}
 */
function somePetId(seedIds) {
  const pool = state.ids.length > 0 && (seedIds.length === 0 || Math.random() < 0.5) ? state.ids : seedIds
  return pool.length === 0 ? undefined : pool[Math.floor(Math.random() * pool.length)]
}

/**
 * @typedef {object} TrafficOptions
 * @property {string} baseUrl BASE_URL
 * @property {string[]} keys API_KEYS
 * @property {{ list: number, create: number, get: number }} mix shares of the three operations
 * @property {number[]} seedIds pet ids created in setup, for getPet
 * @property {Record<string, string>} [tags] more tags for every request and metric (e.g. a phase)
 */

/**
 * One iteration: one request, chosen by the mix.
 * @param {TrafficOptions} options
 * @returns {Response | undefined} the response, or undefined when every key was waiting out a Retry-After
 */
export function mixedIteration(options) {
  const extraTags = options.tags || {}
  const keyIndex = pickKey(options.keys)
  const roll = Math.random()
  const op = roll < options.mix.list ? "list" : roll < options.mix.list + options.mix.create ? "create" : "get"
  if (keyIndex === undefined) {
    throttledByClient.add(1, Object.assign({ op }, extraTags))
    rateLimited.add(true, Object.assign({ op }, extraTags))
    return undefined
  }
  const key = options.keys[keyIndex] || ""

  /** @type {Response} */
  let res
  if (op === "list") {
    const follow = state.next !== undefined && Math.random() < 0.5
    const status = PET_STATUSES[Math.floor(Math.random() * PET_STATUSES.length)] || "available"
    const url = follow && state.next !== undefined
      ? state.next
      : `${options.baseUrl}/pets?limit=20${Math.random() < 1 / 3 ? `&status=${status}` : ""}`
    res = http.get(url, {
      headers: authHeaders(key),
      tags: Object.assign({ op, name: follow ? "GET /v1/pets?cursor" : "GET /v1/pets" }, extraTags)
    })
    if (res.status === 200) state.next = nextLink(res)
    check(res, {
      "list: 200 with an array of pets": (r) => r.status === 429 || (r.status === 200 && isPetArray(bodyJson(r)))
    }, Object.assign({ op }, extraTags))
  } else if (op === "create") {
    const pet = {
      name: `load-${exec.vu.idInTest}-${exec.scenario.iterationInTest}`,
      categoryId: 1 + Math.floor(Math.random() * 10),
      status: PET_STATUSES[Math.floor(Math.random() * PET_STATUSES.length)] || "available"
    }
    res = http.post(`${options.baseUrl}/pets`, JSON.stringify(pet), {
      headers: jsonHeaders(key),
      tags: Object.assign({ op, name: "POST /v1/pets" }, extraTags)
    })
    const body = bodyJson(res)
    if (res.status === 201 && isRecord(body) && isId(body.id) && typeof body.id === "number") {
      state.ids.push(body.id)
      if (state.ids.length > 1000) state.ids.shift()
    }
    check(res, {
      "create: 201 with the pet and its Location": (r) =>
        r.status === 429 ||
        (r.status === 201 && isPet(body) && isRecord(body) && body.name === pet.name &&
          header(r, "Location") === `/v1/pets/${String(body.id)}`)
    }, Object.assign({ op }, extraTags))
  } else {
    const id = somePetId(options.seedIds)
    res = http.get(`${options.baseUrl}/pets/${id === undefined ? 1 : id}`, {
      headers: authHeaders(key),
      tags: Object.assign({ op, name: "GET /v1/pets/{petId}" }, extraTags)
    })
    check(res, {
      "get: 200 with the pet": (r) => {
        const body = bodyJson(r)
        return r.status === 429 || (r.status === 200 && isPet(body) && isRecord(body) && body.id === id)
      }
    }, Object.assign({ op }, extraTags))
  }

  rateLimited.add(res.status === 429, Object.assign({ op }, extraTags))
  if (res.status === 429) {
    holdKey(keyIndex, res)
    check(res, { "429: Retry-After in whole seconds": () => retryAfterSeconds(res) !== undefined }, { op })
  } else if (res.status !== 0) {
    served(res, Object.assign({ op }, extraTags))
  }
  return res
}

/**
 * Verifies every key with `GET /v1/rate_limit` (which costs no quota) and returns what it learned.
 * A key that is unknown, revoked or banned aborts the run: its results would mean nothing.
 * @param {string} baseUrl
 * @param {string[]} keys
 * @returns {{ perMinute: number, perDay: number }} the summed limits of the keys
 */
export function verifyKeys(baseUrl, keys) {
  let perMinute = 0
  let perDay = 0
  keys.forEach((key, index) => {
    const res = http.get(`${baseUrl}/rate_limit`, { headers: authHeaders(key), tags: { name: "GET /v1/rate_limit" } })
    const body = bodyJson(res)
    if (res.status !== 200 || !isRecord(body) || !isRecord(body.minute) || !isRecord(body.day)) {
      exec.test.abort(
        `key #${index + 1} of API_KEYS is not usable: GET /v1/rate_limit answered ${res.status} ${String(res.body)}`
      )
      return
    }
    perMinute += typeof body.minute.limit === "number" ? body.minute.limit : 0
    perDay += typeof body.day.remaining === "number" ? body.day.remaining : 0
  })
  return { perMinute, perDay }
}

/** An id no order has (the largest the API accepts), for asking whether a key is staff. */
const NO_SUCH_ORDER = 9007199254740991
/** The probe's answers: made in the init context, as k6 wants its callbacks. */
const STAFF_PROBE_STATUSES = http.expectedStatuses(403, 404)

/**
 * Aborts the run unless the key is staff (README "Roles"). Roles are checked before anything else of a
 * request: delivering an order that cannot exist is 403 for a customer's key, 404 for a staff key.
 * @param {string} baseUrl
 * @param {string} key
 * @param {string} name the variable that holds the key, for the message
 */
export function verifyStaffKey(baseUrl, key, name) {
  const probe = http.post(`${baseUrl}/store/orders/${NO_SUCH_ORDER}/deliver`, null, {
    headers: authHeaders(key),
    responseCallback: STAFF_PROBE_STATUSES,
    tags: { name: "POST /v1/store/orders/{orderId}/deliver" }
  })
  if (probe.status !== 404) {
    exec.test.abort(`${name} cannot deliver orders: the probe answered ${probe.status} ${String(probe.body)}`)
  }
}

/**
 * Creates a few pets for getPet to fetch.
 * @param {string} baseUrl
 * @param {string} key
 * @param {number} count
 * @returns {number[]} their ids
 */
export function seedPets(baseUrl, key, count) {
  /** @type {number[]} */
  const ids = []
  for (let i = 0; i < count; i++) {
    const res = http.post(`${baseUrl}/pets`, JSON.stringify({ name: `seed-${Date.now()}-${i}`, categoryId: 1 }), {
      headers: jsonHeaders(key),
      tags: { name: "POST /v1/pets" }
    })
    const body = bodyJson(res)
    if (res.status === 201 && isRecord(body) && typeof body.id === "number") ids.push(body.id)
  }
  if (ids.length === 0) exec.test.abort(`setup could not create a pet: POST ${baseUrl}/pets failed`)
  return ids
}

/**
 * Warns when the keys cannot carry the planned rate: the results would then mostly measure the limiter.
 * @param {{ perMinute: number, perDay: number }} capacity from verifyKeys
 * @param {number} requestsPerSecond the highest planned arrival rate
 * @param {number} seconds how long the run lasts
 */
export function warnOnCapacity(capacity, requestsPerSecond, seconds) {
  const perMinuteNeeded = requestsPerSecond * 60
  if (perMinuteNeeded > capacity.perMinute * 0.8) {
    console.warn(
      `API_KEYS allow ${capacity.perMinute} requests/min together but the run plans ${perMinuteNeeded}/min: ` +
        "expect 429s; add keys (see load-tests/README.md)"
    )
  }
  const total = requestsPerSecond * seconds
  if (total > capacity.perDay) {
    console.warn(
      `API_KEYS have ${capacity.perDay} requests left today together but the run may send ${Math.round(total)}: ` +
        "expect 429s once the daily quotas run out"
    )
  }
}
