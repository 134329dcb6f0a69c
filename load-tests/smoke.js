// @ts-check
/**
 * smoke.js — every operation and every documented status code once, one VU, one iteration.
 *
 *   API_KEY_FREE=psk_… k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/smoke.js
 *
 * Each request declares the status it expects (a per-request `responseCallback`), so http_req_failed
 * counts exactly the requests that got another status. Each answer is checked for its body (Pet, Pets or
 * the Error body `{code, message, status}` with its documented `code`), its headers (Location, Link,
 * Allow, Retry-After, Deprecation/Sunset) and, on every /v1 response, the rate-limit headers: well-formed,
 * consistent with each other and with the key's plan, and X-RateLimit-Remaining going down by one per
 * request that costs quota (by none for GET /v1/rate_limit).
 *
 * Covered: GET /healthz, GET /readyz, GET /v1/openapi.json, GET /v1/rate_limit, POST /v1/pets,
 * GET and HEAD /v1/pets (limit, status, cursor and the next Link), GET /v1/pets/{petId}; 200, 201, 400,
 * 401, 404, 405, 413, 415 and 429 (rate_limited; with API_KEY_BAN also api_key_banned). Not covered:
 * 500 and 503, which a healthy server cannot be made to answer from outside.
 *
 * It spends API_KEY_FREE's whole minute to see a 429 (about 60 requests, of 1000 a day), and waits for the
 * next minute first when fewer than 30 are left: use a free key that nothing else uses.
 *
 * Environment:
 *   BASE_URL           API address including /v1 (default http://localhost:8080/v1); the health endpoints
 *                      are looked for at BASE_URL without /v1
 *   API_KEY_FREE       a free key, required
 *   API_KEY_PRO, API_KEY_BUSINESS   optional: their GET /v1/rate_limit and headers are checked against the plan
 *   API_KEY_BAN        optional, a disposable key that the smoke test gets banned on purpose (for
 *                      BAN_SECONDS, 15 minutes by default) to see code api_key_banned
 *   BAN_THRESHOLD      the server's BAN_THRESHOLD, if set (default: the key's per-minute limit)
 *   BAN_SECONDS        the server's BAN_SECONDS (default 900)
 */
import http from "k6/http"
import exec from "k6/execution"
import { check, group, sleep } from "k6"
import { PLANS, envNumber, requireEnv } from "./lib/config.js"
import { smokeSettings } from "./lib/options.js"
import {
  authHeaders,
  bodyJson,
  detailPaths,
  header,
  isErrorBody,
  isPet,
  isPetArray,
  isRecord,
  minuteLimitedConsistent,
  nextLink,
  rateLimitHeadersConsistent,
  rateLimitInfo,
  retryAfterSeconds
} from "./lib/api.js"
/** @import { Response, Params } from "k6/http" */

const SETTINGS = smokeSettings()
const BASE_URL = SETTINGS.baseUrl
const ORIGIN = SETTINGS.origin
const KEY = SETTINGS.key || ""
const KEY_PRO = SETTINGS.keyPro
const KEY_BUSINESS = SETTINGS.keyBusiness
const KEY_BAN = SETTINGS.keyBan
const BAN_SECONDS = SETTINGS.banSeconds

/** The documented deprecation of GET /v1/pets/{petId} (README). */
const DEPRECATION = "@1795305600"
const SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"
/** Requests the smoke test spends before it exhausts the minute on purpose. */
const NEEDED = 30

// One callback per expected status, made in the init context.
const EXPECT = {
  200: http.expectedStatuses(200),
  201: http.expectedStatuses(201),
  400: http.expectedStatuses(400),
  401: http.expectedStatuses(401),
  404: http.expectedStatuses(404),
  405: http.expectedStatuses(405),
  413: http.expectedStatuses(413),
  415: http.expectedStatuses(415),
  429: http.expectedStatuses(429),
  "200|429": http.expectedStatuses(200, 429)
}

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

/** A free key is needed to run (`k6 inspect` shows the options without it). */
export function setup() {
  requireEnv("API_KEY_FREE")
}

/**
 * @param {string} method
 * @param {string} url absolute, or a path under BASE_URL
 * @param {keyof typeof EXPECT} expect
 * @param {{ key?: string, body?: string, headers?: Record<string, string>, name?: string }} [request]
 * @returns {Response}
 */
function call(method, url, expect, request) {
  const req = request || {}
  /** @type {Record<string, string>} */
  const headers = Object.assign(req.key === undefined ? {} : authHeaders(req.key), req.headers || {})
  /** @type {Params} */
  const params = { headers, responseCallback: EXPECT[expect], tags: { name: req.name || `${method} ${url}` } }
  return http.request(
    method,
    /^https?:/.test(url) ? url : BASE_URL + url,
    req.body === undefined ? null : req.body,
    params
  )
}

/** What the free key's X-RateLimit-Remaining was after its last request. */
const spent = {
  /** @type {number | undefined} */
  reset: undefined,
  /** @type {number | undefined} */
  remaining: undefined
}

/**
 * Checks a /v1 response of the free key: its status, its rate-limit headers and that it cost `cost`
 * requests of quota, plus any more checks.
 * @param {string} label what the request was, for the check names
 * @param {Response} res
 * @param {number} status the expected status
 * @param {number} cost 1 for a request that spends quota, 0 for GET /v1/rate_limit and 429s
 * @param {Record<string, (r: Response) => boolean>} [more]
 */
function verifyFree(label, res, status, cost, more) {
  const info = rateLimitInfo(res)
  const sameWindow = spent.reset !== undefined && spent.reset === info.reset && spent.remaining !== undefined
  /** @type {Record<string, (r: Response) => boolean>} */
  const checks = {
    [`${label}: status ${status}`]: (r) => r.status === status,
    [`${label}: rate-limit headers agree with each other and the free plan`]: (r) =>
      rateLimitHeadersConsistent(r, PLANS.free),
    [`${label}: X-RateLimit-Remaining went down by ${cost}`]: () =>
      !sameWindow || info.remaining === Math.max(0, (spent.remaining || 0) - cost)
  }
  for (const name of Object.keys(more || {})) {
    const checker = (more || {})[name]
    if (checker !== undefined) checks[`${label}: ${name}`] = checker
  }
  check(res, checks)
  spent.reset = info.reset
  spent.remaining = info.remaining
}

/**
 * @param {Response} res
 * @returns {boolean} whether the response carries the deprecation headers of GET /v1/pets/{petId}
 */
function deprecated(res) {
  const link = header(res, "Link") || ""
  return header(res, "Deprecation") === DEPRECATION && header(res, "Sunset") === SUNSET &&
    /<[^>]*\/v1\/pets>\s*;\s*rel="?successor-version"?/.test(link)
}

/**
 * @param {Response} res
 * @returns {Record<string, unknown>}
 */
function record(res) {
  const body = bodyJson(res)
  return isRecord(body) ? body : {}
}

/**
 * Waits for the next minute of the server's clock when the free key has fewer than NEEDED requests left.
 */
function ensureQuota() {
  const res = call("GET", "/rate_limit", 200, { key: KEY, name: "GET /v1/rate_limit" })
  const body = record(res)
  const minute = isRecord(body.minute) ? body.minute : {}
  const day = isRecord(body.day) ? body.day : {}
  if (res.status !== 200 || body.plan !== "free") {
    exec.test.abort(
      `API_KEY_FREE must be a valid, unbanned free key: GET /v1/rate_limit answered ${res.status} ${String(res.body)}`
    )
    return
  }
  if (typeof day.remaining !== "number" || day.remaining < NEEDED + PLANS.free.perMinute) {
    exec.test.abort(`API_KEY_FREE has ${String(day.remaining)} requests left today; create a fresh free key`)
    return
  }
  if (typeof minute.remaining === "number" && minute.remaining < NEEDED && typeof minute.reset === "number") {
    const now = Date.parse(header(res, "Date") || "") / 1000
    const wait = Math.min(61, minute.reset - (isFinite(now) ? now : Date.now() / 1000) + 1)
    console.log(`API_KEY_FREE has ${minute.remaining} requests left this minute: waiting ${Math.ceil(wait)} s`)
    sleep(Math.max(0, wait))
  }
}

export default function() {
  ensureQuota()

  group("health (outside /v1)", () => {
    const healthz = call("GET", `${ORIGIN}/healthz`, 200, { name: "GET /healthz" })
    check(healthz, { "GET /healthz: 200 {status: ok}": (r) => r.status === 200 && record(r).status === "ok" })
    const readyz = call("GET", `${ORIGIN}/readyz`, 200, { name: "GET /readyz" })
    check(readyz, { "GET /readyz: 200 {status: ready}": (r) => r.status === 200 && record(r).status === "ready" })
  })

  group("GET /v1/openapi.json", () => {
    const res = call("GET", "/openapi.json", 200, { name: "GET /v1/openapi.json" })
    const doc = record(res)
    const paths = isRecord(doc.paths) ? doc.paths : {}
    // Paths are relative to the document's servers, which end in /v1 as the spec's base addresses do.
    const getPet = isRecord(paths["/pets/{petId}"]) ? paths["/pets/{petId}"] : {}
    check(res, {
      "GET /v1/openapi.json: 200 without a key": (r) => r.status === 200,
      "GET /v1/openapi.json: OpenAPI 3.1 with /pets": () =>
        typeof doc.openapi === "string" && doc.openapi.indexOf("3.1") === 0 && isRecord(paths["/pets"]),
      "GET /v1/openapi.json: getPet marked deprecated": () => isRecord(getPet.get) && getPet.get.deprecated === true
    })
  })

  group("GET /v1/rate_limit", () => {
    const first = call("GET", "/rate_limit", 200, { key: KEY, name: "GET /v1/rate_limit" })
    verifyFree("GET /v1/rate_limit", first, 200, 0, {
      "plan, minute, day and ban as documented": (r) => {
        const body = record(r)
        const minute = isRecord(body.minute) ? body.minute : {}
        const day = isRecord(body.day) ? body.day : {}
        const info = rateLimitInfo(r)
        return body.plan === "free" && body.ban === null && minute.limit === 60 && day.limit === 1000 &&
          typeof minute.remaining === "number" && typeof day.remaining === "number" &&
          typeof minute.reset === "number" && minute.reset % 60 === 0 && typeof day.reset === "number" &&
          day.reset % 86400 === 0 && (info.reset === minute.reset || info.reset === day.reset) &&
          Object.keys(body).length === 4
      }
    })
    // It costs nothing: asking again leaves Remaining where it was.
    verifyFree(
      "GET /v1/rate_limit again",
      call("GET", "/rate_limit", 200, { key: KEY, name: "GET /v1/rate_limit" }),
      200,
      0
    )

    for (
      const [variable, key, plan] of /** @type {Array<[string, string | undefined, "pro" | "business"]>} */ (
        [["API_KEY_PRO", KEY_PRO, "pro"], ["API_KEY_BUSINESS", KEY_BUSINESS, "business"]]
      )
    ) {
      if (key === undefined) continue
      const res = call("GET", "/rate_limit", 200, { key, name: "GET /v1/rate_limit" })
      check(res, {
        [`GET /v1/rate_limit (${variable}): 200 with the ${plan} plan's limits`]: (r) => {
          const body = record(r)
          const minute = isRecord(body.minute) ? body.minute : {}
          const day = isRecord(body.day) ? body.day : {}
          return r.status === 200 && body.plan === plan && minute.limit === PLANS[plan].perMinute &&
            day.limit === PLANS[plan].perDay
        },
        [`GET /v1/rate_limit (${variable}): rate-limit headers of the ${plan} plan`]: (r) =>
          rateLimitHeadersConsistent(r, PLANS[plan])
      })
    }
  })

  /** @type {Record<string, unknown>} */
  let created = {}
  group("POST /v1/pets", () => {
    const res = call("POST", "/pets", 201, {
      key: KEY,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "  smoke Rex  ", categoryId: 1 }),
      name: "POST /v1/pets"
    })
    created = record(res)
    verifyFree("POST /v1/pets", res, 201, 1, {
      "a Pet, name trimmed, status defaulting to available": () =>
        isPet(created) && created.name === "smoke Rex" && created.categoryId === 1 && created.status === "available",
      "Location: /v1/pets/{id}": (r) => header(r, "Location") === `/v1/pets/${String(created.id)}`
    })
    const pending = call("POST", "/pets", 201, {
      key: KEY,
      headers: { "Content-Type": "application/json; charset=utf-8" },
      body: JSON.stringify({ name: "smoke Bella", categoryId: 2, status: "pending" }),
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets with status and charset", pending, 201, 1, {
      "a Pet with status pending": (r) =>
        isPet(bodyJson(r)) && record(r).status === "pending" && record(r).name === "smoke Bella"
    })
  })

  group("GET /v1/pets", () => {
    const first = call("GET", "/pets?limit=1", 200, { key: KEY, name: "GET /v1/pets" })
    const page = bodyJson(first)
    const next = nextLink(first)
    verifyFree("GET /v1/pets?limit=1", first, 200, 1, {
      "one Pet": () => isPetArray(page) && Array.isArray(page) && page.length === 1,
      "Link: <absolute URL with cursor>; rel=\"next\"": () =>
        next !== undefined && /^https?:\/\/.*[?&]cursor=/.test(next)
    })
    if (next !== undefined) {
      const second = call("GET", next, 200, { key: KEY, name: "GET /v1/pets?cursor" })
      verifyFree("GET the next Link", second, 200, 1, {
        "the next pet, in ascending id order": (r) => {
          const more = bodyJson(r)
          const before = Array.isArray(page) ? page[0] : undefined
          const after = Array.isArray(more) ? more[0] : undefined
          return isPetArray(more) && isRecord(before) && isRecord(after) &&
            typeof before.id === "number" && typeof after.id === "number" && after.id > before.id
        }
      })
    }
    const filtered = call("GET", "/pets?status=pending&limit=100", 200, { key: KEY, name: "GET /v1/pets" })
    verifyFree("GET /v1/pets?status=pending", filtered, 200, 1, {
      "only pending pets": (r) => {
        const pets = bodyJson(r)
        return isPetArray(pets) && Array.isArray(pets) && pets.length >= 1 && pets.length <= 100 &&
          pets.every((pet) => isRecord(pet) && pet.status === "pending")
      }
    })
    const head = call("HEAD", "/pets", 200, { key: KEY, name: "HEAD /v1/pets" })
    verifyFree("HEAD /v1/pets", head, 200, 1, { "no body": (r) => r.body === null || r.body === "" })
  })

  group("GET /v1/pets/{petId} (deprecated)", () => {
    const res = call("GET", `/pets/${String(created.id)}`, 200, { key: KEY, name: "GET /v1/pets/{petId}" })
    verifyFree("GET /v1/pets/{petId}", res, 200, 1, {
      "the created Pet": (r) => {
        const pet = record(r)
        return isPet(pet) && pet.id === created.id && pet.name === created.name && pet.status === created.status
      },
      "Deprecation, Sunset and successor Link": (r) => deprecated(r)
    })
  })

  group("400 invalid_request", () => {
    const empty = call("POST", "/pets", 400, {
      key: KEY,
      headers: { "Content-Type": "application/json" },
      body: "{}",
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets {}", empty, 400, 1, {
      "Error invalid_request naming body.name and body.categoryId": (r) => {
        const paths = detailPaths(r)
        return isErrorBody(r, "invalid_request") && paths.indexOf("body.name") >= 0 &&
          paths.indexOf("body.categoryId") >= 0
      }
    })
    const unknown = call("POST", "/pets", 400, {
      key: KEY,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "smoke", categoryId: 1, categoryID: 1 }),
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets with an unknown field", unknown, 400, 1, {
      "Error invalid_request naming the field": (r) =>
        isErrorBody(r, "invalid_request") && detailPaths(r).some((path) => path.indexOf("categoryID") >= 0)
    })
    const malformed = call("POST", "/pets", 400, {
      key: KEY,
      headers: { "Content-Type": "application/json" },
      body: "{\"name\":",
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets malformed JSON", malformed, 400, 1, {
      "Error invalid_request": (r) => isErrorBody(r, "invalid_request")
    })
    const limit = call("GET", "/pets?limit=0", 400, { key: KEY, name: "GET /v1/pets" })
    verifyFree("GET /v1/pets?limit=0", limit, 400, 1, {
      "Error invalid_request naming query.limit": (r) =>
        isErrorBody(r, "invalid_request") && detailPaths(r).indexOf("query.limit") >= 0
    })
    const cursor = call("GET", "/pets?cursor=not-a-cursor", 400, { key: KEY, name: "GET /v1/pets?cursor" })
    verifyFree("GET /v1/pets?cursor=not-a-cursor", cursor, 400, 1, {
      "Error invalid_request": (r) => isErrorBody(r, "invalid_request")
    })
    const petId = call("GET", "/pets/abc", 400, { key: KEY, name: "GET /v1/pets/{petId}" })
    verifyFree("GET /v1/pets/abc", petId, 400, 1, {
      "Error invalid_request naming path.petId": (r) =>
        isErrorBody(r, "invalid_request") && detailPaths(r).indexOf("path.petId") >= 0,
      "Deprecation, Sunset and successor Link": (r) => deprecated(r)
    })
  })

  group("401 unauthorized", () => {
    /** @type {Array<[string, Record<string, string>]>} */
    const cases = [
      ["no Authorization", {}],
      ["an unknown key", { Authorization: "Bearer psk_not-a-real-key" }],
      ["another scheme", { Authorization: `Basic ${KEY}` }]
    ]
    for (const [what, headers] of cases) {
      const res = call("GET", "/pets", 401, { headers, name: "GET /v1/pets" })
      check(res, {
        [`GET /v1/pets with ${what}: status 401`]: (r) => r.status === 401,
        [`GET /v1/pets with ${what}: Error unauthorized`]: (r) => isErrorBody(r, "unauthorized"),
        // Without a valid key the address is limited, per minute only.
        [`GET /v1/pets with ${what}: rate-limit headers of the address limit`]: (r) => rateLimitHeadersConsistent(r)
      })
    }
  })

  group("404 not_found", () => {
    const pet = call("GET", "/pets/9007199254740991", 404, { key: KEY, name: "GET /v1/pets/{petId}" })
    verifyFree("GET /v1/pets/{unknown id}", pet, 404, 1, {
      "Error not_found": (r) => isErrorBody(r, "not_found"),
      "Deprecation, Sunset and successor Link": (r) => deprecated(r)
    })
    const route = call("GET", "/no-such-route", 404, { key: KEY, name: "GET /v1/no-such-route" })
    verifyFree("GET /v1/no-such-route", route, 404, 1, { "Error not_found": (r) => isErrorBody(r, "not_found") })
  })

  group("405 method_not_allowed", () => {
    const res = call("DELETE", "/pets", 405, { key: KEY, name: "DELETE /v1/pets" })
    verifyFree("DELETE /v1/pets", res, 405, 1, {
      "Error method_not_allowed": (r) => isErrorBody(r, "method_not_allowed"),
      "Allow: GET, POST": (r) => {
        const allow = (header(r, "Allow") || "").split(",").map((method) => method.trim())
        return allow.indexOf("GET") >= 0 && allow.indexOf("POST") >= 0 && allow.indexOf("DELETE") < 0
      }
    })
  })

  group("413 payload_too_large", () => {
    let name = "x"
    while (name.length < 17 * 1024) name += name
    const res = call("POST", "/pets", 413, {
      key: KEY,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name, categoryId: 1 }),
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets over 16 KiB", res, 413, 1, {
      "Error payload_too_large": (r) => isErrorBody(r, "payload_too_large")
    })
  })

  group("415 unsupported_media_type", () => {
    const res = call("POST", "/pets", 415, {
      key: KEY,
      headers: { "Content-Type": "text/plain" },
      body: JSON.stringify({ name: "smoke", categoryId: 1 }),
      name: "POST /v1/pets"
    })
    verifyFree("POST /v1/pets as text/plain", res, 415, 1, {
      "Error unsupported_media_type": (r) => isErrorBody(r, "unsupported_media_type")
    })
  })

  group("429 rate_limited", () => {
    // Spend what is left of the minute, then one more (enough for two minutes, should one end meanwhile).
    /** @type {Response | undefined} */
    let limited
    for (let i = 0; i < 2 * PLANS.free.perMinute + 10 && limited === undefined; i++) {
      const res = call("GET", "/pets?limit=1", "200|429", {
        key: KEY,
        name: "GET /v1/pets?limit=1 (spending the minute)"
      })
      if (res.status === 429) limited = res
    }
    check(limited, { "429 after the minute's quota is spent": (r) => r !== undefined })
    if (limited === undefined) return
    spent.reset = undefined // the filler requests were not tracked
    verifyFree("GET /v1/pets over the quota", limited, 429, 0, {
      "Retry-After (whole seconds) = seconds to the reset, Error rate_limited, nothing remaining": (r) =>
        minuteLimitedConsistent(r)
    })
    const reset = rateLimitInfo(limited).reset || 0
    const status = call("GET", "/rate_limit", 200, { key: KEY, name: "GET /v1/rate_limit" })
    check(status, {
      "GET /v1/rate_limit while limited: 200, minute spent": (r) => {
        const minute = isRecord(record(r).minute) ? /** @type {Record<string, unknown>} */ (record(r).minute) : {}
        return r.status === 200 &&
          (minute.remaining === 0 || (typeof minute.reset === "number" && minute.reset > reset))
      }
    })
  })

  if (KEY_BAN !== undefined) {
    group("429 api_key_banned (API_KEY_BAN)", () => {
      const probe = call("GET", "/rate_limit", 200, { key: KEY_BAN, name: "GET /v1/rate_limit" })
      const minute = isRecord(record(probe).minute) ? /** @type {Record<string, unknown>} */ (record(probe).minute) : {}
      const limit = typeof minute.limit === "number" ? minute.limit : 60
      const threshold = envNumber("BAN_THRESHOLD", limit)
      /** @type {Response | undefined} */
      let bannedRes
      // A ban takes limit + threshold + 1 requests within one minute of the server's clock. Enough for two
      // minutes, so a minute that ends anywhere in the first attempt (on a slow machine it may) is no failure.
      for (let i = 0; i < 2 * (limit + threshold + 1) && bannedRes === undefined; i++) {
        const res = call("GET", "/pets?limit=1", "200|429", {
          key: KEY_BAN,
          name: "GET /v1/pets?limit=1 (getting banned)"
        })
        if (res.status === 429 && record(res).code === "api_key_banned") bannedRes = res
      }
      check(bannedRes, {
        "a key that keeps sending while limited is banned: 429 api_key_banned": (r) =>
          r !== undefined && isErrorBody(r, "api_key_banned"),
        "api_key_banned: Retry-After is the rest of the ban": (r) => {
          const seconds = r === undefined ? undefined : retryAfterSeconds(r)
          return seconds !== undefined && seconds > 60 && seconds <= BAN_SECONDS
        }
      })
      const status = call("GET", "/rate_limit", 429, { key: KEY_BAN, name: "GET /v1/rate_limit" })
      check(status, { "GET /v1/rate_limit while banned: 429 api_key_banned": (r) => isErrorBody(r, "api_key_banned") })
    })
  }
}
