// @ts-check
/**
 * rate-limits.js — the quotas hold exactly, every 429 is well-formed, and a client that honours
 * Retry-After is never banned.
 *
 *   API_KEY_FREE=psk_… API_KEY_PRO=psk_… API_KEY_BUSINESS=psk_… API_KEY_RETRY=psk_… \
 *     k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/rate-limits.js
 *
 * (Keys go in the environment, never in -e arguments, which any user of the machine can read.)
 *
 * Scenarios, all running at once for DURATION (default 100 s):
 *   quota_<plan>        one key of the plan, GET /v1/pets?limit=1 at a constant RATE_FACTOR × the plan's
 *                       per-minute quota (default 1.5×: free 90/min, pro 450/min, business 1500/min).
 *   honour_retry_after  one VU on its own key, sending HONOUR_RPS requests a second and, after a 429,
 *                       sleeping Retry-After seconds before the next request.
 *
 * Windows are the server's UTC minutes. Every response says which one it was counted in: X-RateLimit-Reset,
 * the end of its minute. Responses are counted per window, labelled relative to the minute the scenario
 * started in: `w0` is that minute, `w1` the next one, … (`w-1` only when the server's clock is behind).
 * The thresholds (k6 exits non-zero if any fails):
 *   rl_admitted{plan:P,window:wN}     count<=quota   no window admits more than the plan's per-minute quota
 *   rl_measured_admitted{plan:P}      count==quota   the best-covered window (at least min(60, DURATION/2)
 *                                                    seconds of traffic, so it must run out) admits exactly
 *                                                    the quota…
 *   rl_measured_refused{plan:P}       count>0        …and then refuses
 *   rl_banned{plan:P}                 count==0       staying under the ban threshold is never punished
 *   rl_honour_refused                 count>0        the honouring client did reach its limit…
 *   rl_honour_refused{window:wN}      count<=1       …at most once a window…
 *   rl_honour_banned                  count==0       …and was never banned
 *   checks                            rate==1        every response's rate-limit headers agree with each
 *                                                    other and with the plan; every 429 carries Retry-After
 *                                                    in whole seconds and the Error body, code rate_limited
 *   http_req_failed                   rate==0        nothing but 2xx and 429 (the expected statuses)
 *
 * The keys must be unused by anything else during the run (setup waits for the next minute when they were
 * used in the current one), and have their daily quota left. Create fresh ones for each run:
 *   pnpm -s keys create --plan free --name rl-free     (and pro, business, and a second free one for the retry client)
 *
 * Environment:
 *   BASE_URL                                  API address including /v1 (default http://localhost:8080/v1)
 *   API_KEY_FREE, API_KEY_PRO, API_KEY_BUSINESS   a key of each plan in PLANS
 *   API_KEY_RETRY                             the honouring client's key, free plan advised (default: the
 *                                             first key of API_KEYS); must differ from the others
 *   PLANS                                     the plans to test (default free,pro,business)
 *   DURATION                                  default 100s; at least 2 × (60/RATE_FACTOR + WINDOW_SLACK)
 *   RATE_FACTOR                               sending rate over the quota, between 1 and 2 (default 1.5)
 *   WINDOW_SLACK                              seconds allowed for clock skew and latency (default 5)
 *   BAN_THRESHOLD                             the server's BAN_THRESHOLD when set (default: the quota)
 *   HONOUR_RPS                                the honouring client's rate (default 10)
 *   HONOUR                                    false to leave out the honouring client
 */
import http from "k6/http"
import exec from "k6/execution"
import { check, sleep } from "k6"
import { Counter } from "k6/metrics"
import { PLANS, requireEnv } from "./lib/config.js"
import { RATE_LIMIT_KEY_VARIABLES, rateLimitsSettings } from "./lib/options.js"
import {
  authHeaders,
  bodyJson,
  header,
  isRecord,
  minuteLimitedConsistent,
  rateLimitHeadersConsistent,
  rateLimitInfo,
  retryAfterSeconds
} from "./lib/api.js"
/** @import { PlanName } from "./lib/config.js" */
/** @import { Response } from "k6/http" */

const SETTINGS = rateLimitsSettings()
const BASE_URL = SETTINGS.baseUrl
const DURATION = SETTINGS.duration
const HONOUR_RPS = SETTINGS.honourRps
const KEY_VARIABLES = RATE_LIMIT_KEY_VARIABLES
const PLAN_NAMES = SETTINGS.planNames
const KEYS = SETTINGS.keys
const HONOUR_KEY = SETTINGS.honourKey
const LAST_WINDOW = SETTINGS.lastWindow

/**
 * @param {number} index a window's offset in minutes from the minute the scenario started in
 * @returns {string}
 */
function windowLabel(index) {
  return `w${index}`
}

const admitted = new Counter("rl_admitted")
const refused = new Counter("rl_refused")
const measuredAdmitted = new Counter("rl_measured_admitted")
const measuredRefused = new Counter("rl_measured_refused")
const banned = new Counter("rl_banned")
const honourRefused = new Counter("rl_honour_refused")
const honourBanned = new Counter("rl_honour_banned")

// The 429s are expected: only other statuses and transport errors count as failed requests.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

/**
 * Where the windows of the running scenario lie, on this machine's clock.
 * @returns {{ firstReset: number, measured: number }} the Reset of the window the scenario started in
 *   (label w0), and the index of the best-covered window (on a tie, the later one: fresher)
 */
function windowLayout() {
  const start = exec.scenario.startTime / 1000
  const end = start + DURATION.seconds
  const firstReset = Math.floor(start / 60) * 60 + 60
  let measured = 0
  let best = -1
  for (let index = 0; firstReset - 60 + 60 * index < end; index++) {
    const windowStart = firstReset - 60 + 60 * index
    const coverage = Math.min(windowStart + 60, end) - Math.max(windowStart, start)
    if (coverage >= best) {
      best = coverage
      measured = index
    }
  }
  return { firstReset, measured }
}

/**
 * @param {Response} res
 * @param {number} firstReset
 * @returns {number | undefined} the window of the response, by its X-RateLimit-Reset, when it is one of the run's
 */
function windowIndex(res, firstReset) {
  const reset = rateLimitInfo(res).reset
  if (reset === undefined || (reset - firstReset) % 60 !== 0) return undefined
  const index = (reset - firstReset) / 60
  return index >= -1 && index <= LAST_WINDOW ? index : undefined
}

/**
 * @param {Response} res
 * @returns {string | undefined} the Error body's code
 */
function errorCode(res) {
  const body = bodyJson(res)
  return isRecord(body) && typeof body.code === "string" ? body.code : undefined
}

/**
 * Checks every key with GET /v1/rate_limit (which costs no quota): valid, of the expected plan, not banned,
 * with daily quota left for the run. Waits for the next minute when a key was used in the current one, so
 * that the run's windows start from zero.
 */
export function setup() {
  // Every key this configuration needs: `k6 inspect` shows the options without them, a run cannot go.
  for (const plan of PLAN_NAMES) requireEnv(KEY_VARIABLES[plan])
  if (SETTINGS.honour && HONOUR_KEY === undefined) {
    throw new Error("API_KEY_RETRY (or API_KEYS) is required for the honour_retry_after scenario, or set HONOUR=false")
  }
  // Counters get a sample either way, so that a count>0 over no sample fails on every k6.
  for (const plan of PLAN_NAMES) {
    measuredAdmitted.add(0, { plan })
    measuredRefused.add(0, { plan })
  }
  if (SETTINGS.honour) honourRefused.add(0)
  /** @type {Array<{ variable: string, key: string, plan: PlanName | undefined }>} */
  const keys = PLAN_NAMES.map((plan) => ({ variable: KEY_VARIABLES[plan], key: KEYS[plan] || "", plan }))
  if (HONOUR_KEY !== undefined) keys.push({ variable: "API_KEY_RETRY", key: HONOUR_KEY, plan: undefined })
  let waitSeconds = 0
  for (const { variable, key, plan } of keys) {
    const res = http.get(`${BASE_URL}/rate_limit`, { headers: authHeaders(key), tags: { name: "GET /v1/rate_limit" } })
    const body = bodyJson(res)
    if (res.status !== 200 || !isRecord(body) || !isRecord(body.minute) || !isRecord(body.day)) {
      exec.test.abort(
        `${variable}: GET /v1/rate_limit answered ${res.status} ${String(res.body)} ` +
          "(unknown, revoked or banned key? a ban ends after BAN_SECONDS, or at POST /admin/keys/{id}/unban)"
      )
      return
    }
    if (plan !== undefined && body.plan !== plan) {
      exec.test.abort(`${variable} is a ${String(body.plan)} key, not a ${plan} one`)
      return
    }
    const limit = typeof body.minute.limit === "number" ? body.minute.limit : 0
    const needed = limit * (LAST_WINDOW + 2)
    if (typeof body.day.remaining !== "number" || body.day.remaining < needed) {
      exec.test.abort(
        `${variable} has ${String(body.day.remaining)} requests left today, the run needs ${needed}: ` +
          "create a fresh key (pnpm -s keys create --plan …)"
      )
      return
    }
    if (plan === undefined && limit / HONOUR_RPS > DURATION.seconds / 2) {
      exec.test.abort(
        `${variable} allows ${limit} requests a minute: at HONOUR_RPS ${HONOUR_RPS} it would not ` +
          "reach its limit in time; use a free key or raise HONOUR_RPS"
      )
      return
    }
    if (body.minute.remaining !== limit) {
      // Wait for the server's next minute, by the server's own clock.
      const date = Date.parse(header(res, "Date") || "")
      const reset = typeof body.minute.reset === "number" ? body.minute.reset : 0
      const now = isFinite(date) ? date / 1000 : Date.now() / 1000
      waitSeconds = Math.max(waitSeconds, Math.min(61, reset - now + 1))
    }
  }
  if (waitSeconds > 0) {
    console.log(`a key was used this minute: waiting ${Math.ceil(waitSeconds)} s for the next one`)
    sleep(waitSeconds)
  }
}

/** A quota scenario's iteration: one request, counted in the window the server says it belongs to. */
export function quota() {
  const plan = /** @type {PlanName} */ (__ENV.PLAN)
  const limits = PLANS[plan]
  const layout = windowLayout()
  const res = http.get(`${BASE_URL}/pets?limit=1`, {
    headers: authHeaders(KEYS[plan] || ""),
    tags: { name: "GET /v1/pets?limit=1" }
  })
  const index = windowIndex(res, layout.firstReset)
  const window = index === undefined ? "outside" : windowLabel(index)
  const code = res.status === 429 ? errorCode(res) : undefined
  check(res, {
    "quota: 200 or 429": (r) => r.status === 200 || r.status === 429,
    "quota: rate-limit headers agree with each other and the plan": (r) => rateLimitHeadersConsistent(r, limits),
    "quota: X-RateLimit-Reset is the end of a minute of the run": () => index !== undefined
  }, { plan })
  if (res.status === 200) {
    admitted.add(1, { plan, window })
    if (index === layout.measured) measuredAdmitted.add(1, { plan })
  } else if (res.status === 429) {
    refused.add(1, { plan, window })
    if (index === layout.measured) measuredRefused.add(1, { plan })
    if (code === "api_key_banned") banned.add(1, { plan })
    check(res, {
      "quota 429: Retry-After (whole seconds) = seconds to the minute's reset, Error body rate_limited, nothing remaining":
        (r) => minuteLimitedConsistent(r)
    }, { plan })
  }
}

/**
 * The honouring client's iteration: one request; after a 429, Retry-After seconds of sleep, else
 * 1/HONOUR_RPS seconds.
 */
export function honour() {
  const layout = windowLayout()
  const res = http.get(`${BASE_URL}/pets?limit=1`, {
    headers: authHeaders(HONOUR_KEY || ""),
    tags: { name: "GET /v1/pets?limit=1" }
  })
  const index = windowIndex(res, layout.firstReset)
  check(res, {
    "honour: 200 or 429": (r) => r.status === 200 || r.status === 429,
    "honour: X-RateLimit-Reset is the end of a minute of the run": () => index !== undefined
  })
  if (res.status !== 429) {
    sleep(1 / HONOUR_RPS)
    return
  }
  honourRefused.add(1, { window: index === undefined ? "outside" : windowLabel(index) })
  if (errorCode(res) === "api_key_banned") honourBanned.add(1)
  check(res, {
    "honour 429: Retry-After (whole seconds) = seconds to the minute's reset, Error body rate_limited": (r) =>
      minuteLimitedConsistent(r)
  })
  // The whole Retry-After, even past the scenario's end (its gracefulStop ends the sleep). A sleep cut at
  // the end races the executor: k6 may start one more iteration first, and its request, sent before
  // Retry-After elapsed, is refused again in the same window: the client's fault, not the server's.
  sleep(retryAfterSeconds(res) || 1)
}
