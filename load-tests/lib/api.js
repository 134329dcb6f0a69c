// @ts-check
/**
 * What every script needs to talk to the API and judge its answers: headers, JSON bodies, the Error, Pet,
 * Order, Event and webhook endpoint shapes, and the rate-limit headers (README "Quotas").
 */
/** @import { Response } from "k6/http" */

export const PET_STATUSES = ["available", "pending", "sold"]
export const ORDER_STATUSES = ["placed", "delivered", "cancelled"]
/** Every event type (README "Events and webhooks"). */
export const EVENT_TYPES = [
  "pet.created",
  "pet.updated",
  "pet.deleted",
  "order.placed",
  "order.cancelled",
  "order.delivered",
  "webhook.test"
]
/** A key may register this many webhook endpoints (the contract's MAX_WEBHOOK_ENDPOINTS). */
export const MAX_WEBHOOK_ENDPOINTS = 10

/**
 * @param {string} key an API key
 * @param {Record<string, string>} [extra] more headers
 * @returns {Record<string, string>}
 */
export function authHeaders(key, extra) {
  return Object.assign({ Authorization: `Bearer ${key}` }, extra)
}

/**
 * @param {string} key an API key
 * @returns {Record<string, string>} the headers of a JSON request body
 */
export function jsonHeaders(key) {
  return authHeaders(key, { "Content-Type": "application/json" })
}

/**
 * A response header by name, whatever its case (k6 canonicalises names, `X-Ratelimit-Limit`).
 * @param {Response} res
 * @param {string} name
 * @returns {string | undefined}
 */
export function header(res, name) {
  const wanted = name.toLowerCase()
  for (const key of Object.keys(res.headers)) {
    if (key.toLowerCase() === wanted) return res.headers[key]
  }
  return undefined
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
export function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value)
}

/**
 * The body parsed as JSON, or undefined when there is none or it is no JSON.
 * @param {Response} res
 * @returns {unknown}
 */
export function bodyJson(res) {
  if (typeof res.body !== "string" || res.body === "") return undefined
  try {
    return JSON.parse(res.body)
  } catch (_notJson) {
    return undefined
  }
}

/**
 * @param {unknown} value
 * @returns {boolean} whether value is a positive safe integer
 */
export function isId(value) {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 1
}

/**
 * A Pet as the spec returns it: `id`, `name`, `categoryId` and `status`, nothing else.
 * @param {unknown} value
 * @returns {boolean}
 */
export function isPet(value) {
  if (!isRecord(value)) return false
  const allowed = ["id", "name", "categoryId", "status"]
  return isId(value.id) && typeof value.name === "string" && value.name.length >= 1 && isId(value.categoryId) &&
    typeof value.status === "string" && PET_STATUSES.indexOf(value.status) >= 0 &&
    Object.keys(value).every((field) => allowed.indexOf(field) >= 0)
}

/**
 * @param {unknown} value
 * @returns {boolean} whether value is a JSON array of Pets
 */
export function isPetArray(value) {
  return Array.isArray(value) && value.every(isPet)
}

/**
 * @param {unknown} value
 * @returns {boolean} whether value is an ISO 8601 UTC time with milliseconds, as the store writes them
 */
export function isTimestamp(value) {
  return typeof value === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value) &&
    isFinite(Date.parse(value))
}

/**
 * An Order (README "Orders"): `id`, `petId`, `status`, `placedAt` and `updatedAt`, nothing else, and
 * `updatedAt` never before `placedAt`.
 * @param {unknown} value
 * @returns {boolean}
 */
export function isOrder(value) {
  if (!isRecord(value)) return false
  const allowed = ["id", "petId", "status", "placedAt", "updatedAt"]
  return isId(value.id) && isId(value.petId) && typeof value.status === "string" &&
    ORDER_STATUSES.indexOf(value.status) >= 0 && isTimestamp(value.placedAt) && isTimestamp(value.updatedAt) &&
    Date.parse(String(value.updatedAt)) >= Date.parse(String(value.placedAt)) &&
    Object.keys(value).every((field) => allowed.indexOf(field) >= 0)
}

/**
 * @param {unknown} value
 * @param {string[]} allowed
 * @returns {boolean} whether value is an object with no field outside `allowed`
 */
function onlyFields(value, allowed) {
  return isRecord(value) && Object.keys(value).every((field) => allowed.indexOf(field) >= 0)
}

/**
 * An Event (README "Events and webhooks"): `id` (`evt_` and 32 hex digits), `type`, `timestamp` and `data`,
 * nothing else; `data` a Pet for `pet.*`, an Order for `order.*`, `{endpointId, message}` for `webhook.test`.
 * @param {unknown} value
 * @returns {boolean}
 */
export function isEvent(value) {
  if (!isRecord(value) || !onlyFields(value, ["id", "type", "timestamp", "data"])) return false
  if (typeof value.id !== "string" || !/^evt_[0-9a-f]{32}$/.test(value.id) || !isTimestamp(value.timestamp)) {
    return false
  }
  const type = value.type
  if (typeof type !== "string" || EVENT_TYPES.indexOf(type) < 0) return false
  if (type.indexOf("pet.") === 0) return isPet(value.data)
  if (type.indexOf("order.") === 0) {
    return isOrder(value.data) && isRecord(value.data) && type === `order.${String(value.data.status)}`
  }
  return onlyFields(value.data, ["endpointId", "message"]) && isRecord(value.data) &&
    typeof value.data.endpointId === "string" && typeof value.data.message === "string"
}

/**
 * A WebhookEndpoint: `id` (`ep_` and 32 hex digits), `url`, `description`, `eventTypes`, `enabled`,
 * `disabledReason` (null unless the service disabled it), `createdAt` and `updatedAt`, nothing else; with
 * `secret`, the answer to its creation, which alone shows the secret.
 * @param {unknown} value
 * @param {boolean} [created] whether it is the creation's answer, with `secret`
 * @returns {boolean}
 */
export function isWebhookEndpoint(value, created) {
  const allowed = ["id", "url", "description", "eventTypes", "enabled", "disabledReason", "createdAt", "updatedAt"]
  if (!isRecord(value) || !onlyFields(value, created ? allowed.concat(["secret"]) : allowed)) return false
  if (created ? !isWebhookSecret(value.secret) : value.secret !== undefined) return false
  return typeof value.id === "string" && /^ep_[0-9a-f]{32}$/.test(value.id) && typeof value.url === "string" &&
    typeof value.description === "string" && Array.isArray(value.eventTypes) &&
    value.eventTypes.every((type) => EVENT_TYPES.indexOf(type) >= 0) && typeof value.enabled === "boolean" &&
    (value.disabledReason === null || typeof value.disabledReason === "string") &&
    isTimestamp(value.createdAt) && isTimestamp(value.updatedAt) &&
    Date.parse(String(value.updatedAt)) >= Date.parse(String(value.createdAt))
}

/**
 * @param {unknown} value
 * @returns {boolean} whether value is a signing secret: `whsec_` and 24 bytes in base64
 */
export function isWebhookSecret(value) {
  return typeof value === "string" && /^whsec_[A-Za-z0-9+/]{32}$/.test(value)
}

/**
 * A WebhookAttempt: one delivery attempt of one event to one endpoint.
 * @param {unknown} value
 * @returns {boolean}
 */
export function isWebhookAttempt(value) {
  if (
    !isRecord(value) ||
    !onlyFields(value, [
      "eventId",
      "attempt",
      "attemptedAt",
      "outcome",
      "statusCode",
      "latencyMs",
      "error",
      "nextAttemptAt"
    ])
  ) {
    return false
  }
  return typeof value.eventId === "string" && /^evt_[0-9a-f]{32}$/.test(value.eventId) && isId(value.attempt) &&
    isTimestamp(value.attemptedAt) && (value.outcome === "succeeded" || value.outcome === "failed") &&
    (value.statusCode === null || (typeof value.statusCode === "number" && Number.isInteger(value.statusCode))) &&
    typeof value.latencyMs === "number" && Number.isInteger(value.latencyMs) && value.latencyMs >= 0 &&
    (value.error === null || typeof value.error === "string") &&
    (value.nextAttemptAt === null || isTimestamp(value.nextAttemptAt))
}

/**
 * The Error body: exactly `{code, message, status}` with `status` equal to the HTTP status; a 400 also
 * carries `details`, one `{path, message}` per offending field.
 * @param {Response} res
 * @param {string} [code] the expected `code`
 * @returns {boolean}
 */
export function isErrorBody(res, code) {
  const body = bodyJson(res)
  if (!isRecord(body)) return false
  const allowed = res.status === 400
    ? ["code", "message", "status", "details", "requestId"]
    : ["code", "message", "status", "requestId"]
  if (!Object.keys(body).every((field) => allowed.indexOf(field) >= 0)) return false
  // The README's requestId: the answer's X-Request-Id, in every error body.
  if (body.requestId !== header(res, "X-Request-Id")) return false
  if (typeof body.code !== "string" || typeof body.message !== "string" || body.message === "") return false
  if (body.status !== res.status) return false
  if (code !== undefined && body.code !== code) return false
  if (res.status === 400) {
    const details = body.details
    if (!Array.isArray(details) || details.length === 0) return false
    return details.every((detail) =>
      isRecord(detail) && typeof detail.path === "string" && typeof detail.message === "string"
    )
  }
  return true
}

/**
 * The `path`s of a 400's `details`.
 * @param {Response} res
 * @returns {string[]}
 */
export function detailPaths(res) {
  const body = bodyJson(res)
  if (!isRecord(body) || !Array.isArray(body.details)) return []
  /** @type {string[]} */
  const paths = []
  for (const detail of body.details) {
    if (isRecord(detail) && typeof detail.path === "string") paths.push(detail.path)
  }
  return paths
}

/**
 * @param {Response} res
 * @returns {string | undefined} the `rel="next"` target of the Link header
 */
export function nextLink(res) {
  const link = header(res, "Link")
  if (link === undefined) return undefined
  for (const part of link.split(",")) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match !== null && /(^|;)\s*rel="?next"?\s*(;|$)/.test(match[2] || "")) return match[1]
  }
  return undefined
}

/**
 * @param {string | undefined} text
 * @returns {number | undefined} the whole number the text spells in decimal digits
 */
export function wholeNumber(text) {
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined
}

/**
 * @typedef {object} RateLimitInfo
 * @property {number | undefined} limit X-RateLimit-Limit
 * @property {number | undefined} remaining X-RateLimit-Remaining
 * @property {number | undefined} reset X-RateLimit-Reset (Unix seconds)
 * @property {Record<string, { q: number, w: number }>} policy RateLimit-Policy, by window name
 * @property {Record<string, { r: number, t: number }>} windows RateLimit, by window name
 */

/**
 * Parses the IETF httpapi draft's structured list, `"minute";q=60;w=60, "day";q=1000;w=86400`.
 * @param {string | undefined} text
 * @returns {Record<string, Record<string, number>>}
 */
function parseStructuredList(text) {
  /** @type {Record<string, Record<string, number>>} */
  const items = {}
  if (text === undefined) return items
  for (const item of text.split(",")) {
    const [name, ...params] = item.trim().split(";")
    if (name === undefined || name === "") continue
    /** @type {Record<string, number>} */
    const values = {}
    for (const param of params) {
      const [key, value] = param.trim().split("=")
      const number = wholeNumber(value)
      if (key !== undefined && number !== undefined) values[key] = number
    }
    items[name.replace(/^"|"$/g, "")] = values
  }
  return items
}

/**
 * @param {Response} res
 * @returns {RateLimitInfo}
 */
export function rateLimitInfo(res) {
  /** @type {Record<string, { q: number, w: number }>} */
  const policy = {}
  const policies = parseStructuredList(header(res, "RateLimit-Policy"))
  for (const name of Object.keys(policies)) {
    const entry = policies[name]
    if (entry !== undefined && entry.q !== undefined && entry.w !== undefined) policy[name] = { q: entry.q, w: entry.w }
  }
  /** @type {Record<string, { r: number, t: number }>} */
  const windows = {}
  const states = parseStructuredList(header(res, "RateLimit"))
  for (const name of Object.keys(states)) {
    const entry = states[name]
    if (entry !== undefined && entry.r !== undefined && entry.t !== undefined) {
      windows[name] = { r: entry.r, t: entry.t }
    }
  }
  return {
    limit: wholeNumber(header(res, "X-RateLimit-Limit")),
    remaining: wholeNumber(header(res, "X-RateLimit-Remaining")),
    reset: wholeNumber(header(res, "X-RateLimit-Reset")),
    policy,
    windows
  }
}

/**
 * How far, in whole seconds, a response's `Date` may stand from the moment the server took its quota
 * decision: both fall within the request's round trip, and both are rounded to whole seconds. 1 s for
 * rounding; a slow answer (a loaded server) may take its whole round trip between the two.
 * @param {Response} res
 * @returns {number}
 */
function dateSlack(res) {
  return Math.max(1, Math.ceil(res.timings.duration / 1000))
}

/**
 * The checks every `/v1` response passes: the three X-RateLimit headers are whole numbers, RateLimit-Policy
 * and RateLimit describe the minute (and, for a key, the day) with the plan's quotas, the X- headers
 * describe the binding window (the one with fewer requests left; on a tie, the minute), and its Reset is a
 * window boundary `t` seconds after the response's `Date` (± `dateSlack`).
 * @param {Response} res
 * @param {{ perMinute: number, perDay: number }} [plan] the key's plan; none for a request without a valid key
 * @returns {boolean}
 */
export function rateLimitHeadersConsistent(res, plan) {
  const info = rateLimitInfo(res)
  if (info.limit === undefined || info.remaining === undefined || info.reset === undefined) return false
  const minute = info.policy.minute
  const minuteState = info.windows.minute
  if (minute === undefined || minute.w !== 60 || minuteState === undefined) return false
  if (minuteState.r > minute.q || minuteState.t > 60) return false
  const day = info.policy.day
  const dayState = info.windows.day
  /** @type {{ q: number, r: number, t: number, length: number }} */
  let binding = { q: minute.q, r: minuteState.r, t: minuteState.t, length: 60 }
  if (plan !== undefined) {
    if (minute.q !== plan.perMinute || day === undefined || day.q !== plan.perDay || day.w !== 86400) return false
    if (dayState === undefined || dayState.r > day.q || dayState.t > 86400) return false
    if (dayState.r < minuteState.r) binding = { q: day.q, r: dayState.r, t: dayState.t, length: 86400 }
  } else if (day !== undefined || dayState !== undefined) {
    // Requests without a valid key are limited per address, per minute only.
    return false
  }
  if (info.limit !== binding.q || info.remaining !== binding.r || info.reset % binding.length !== 0) return false
  const date = header(res, "Date")
  if (date !== undefined) {
    const now = Math.floor(Date.parse(date) / 1000)
    if (isFinite(now) && Math.abs(info.reset - now - binding.t) > dateSlack(res)) return false
  }
  return true
}

/**
 * Retry-After as the README promises it on a 429: whole seconds, at least 1.
 * @param {Response} res
 * @returns {number | undefined}
 */
export function retryAfterSeconds(res) {
  const seconds = wholeNumber(header(res, "Retry-After"))
  return seconds !== undefined && seconds >= 1 ? seconds : undefined
}

/**
 * Whether a 429 for the minute window is consistent: Error body with `code` rate_limited, Retry-After in
 * whole seconds equal to the minute's seconds to reset (at least 1), nothing remaining in the minute,
 * and X-RateLimit-Reset − Date = Retry-After (± `dateSlack`).
 * @param {Response} res
 * @returns {boolean}
 */
export function minuteLimitedConsistent(res) {
  const retryAfter = retryAfterSeconds(res)
  const info = rateLimitInfo(res)
  const minute = info.windows.minute
  if (retryAfter === undefined || minute === undefined || info.reset === undefined) return false
  if (!isErrorBody(res, "rate_limited") || retryAfter > 60) return false
  if (minute.r !== 0 || info.remaining !== 0 || retryAfter !== Math.max(1, minute.t)) return false
  const date = header(res, "Date")
  if (date !== undefined) {
    const now = Math.floor(Date.parse(date) / 1000)
    if (isFinite(now) && Math.abs(info.reset - now - retryAfter) > dateSlack(res)) return false
  }
  return true
}
