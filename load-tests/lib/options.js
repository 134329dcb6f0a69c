// @ts-check
/**
 * Each script's configuration and k6 options, read from the environment at init. Plain functions without
 * k6's modules, so that the suite evaluates them under Node (test/options.test.ts) as `k6 inspect` does.
 *
 * A missing key is no error here: `k6 inspect` shows the options of a script without any key, and each
 * script's `setup` refuses to start without its keys (requireKeys, requireEnv). A variable that is set but
 * wrong throws at once, naming it.
 */
import {
  PLANS,
  apiKeys,
  baseUrl,
  envDuration,
  envNumber,
  envPositiveInt,
  envString,
  originOf,
  trafficMix
} from "./config.js"
import { MAX_WEBHOOK_ENDPOINTS } from "./api.js"
/** @import { PlanName } from "./config.js" */
/** @import { Options, Scenario, Threshold } from "k6/options" */

/** The counter of served requests, tagged as served_req_duration: the samples its sub-metrics received. */
export const SERVED_REQUESTS = "served_requests"
/** Every event type a story of events.js makes its customer see, and the one only a delivery makes. */
const STORY_EVENT_TYPES = ["pet.created", "pet.updated", "order.placed"]

/**
 * Splits a threshold's name, `metric{tag:value,tag:value}`, into its metric and its tag filter.
 * @param {string} name
 * @returns {{ metric: string, tags: Record<string, string> | undefined }}
 */
export function parseThresholdName(name) {
  const match = /^([^{]+)\{(.*)\}$/.exec(name)
  if (match === null) return { metric: name, tags: undefined }
  /** @type {Record<string, string>} */
  const tags = {}
  for (const pair of (match[2] || "").split(",")) {
    const colon = pair.indexOf(":")
    if (colon > 0) tags[pair.slice(0, colon).trim()] = pair.slice(colon + 1).trim()
  }
  return { metric: match[1] || name, tags }
}

/**
 * k6 judges a threshold on a sub-metric that received no samples as if it held: a Trend's `p(95)` is then 0
 * and passes, a Rate's `rate` too. So for every sub-metric of `metrics` in `thresholds`, a `count>0` on the
 * same tags of `counter`, which counts what those sub-metrics are fed; `setup` adds 0 to the counter with
 * each of `seeds` (k6 judges and shows a counter only once it has a sample), so an operation that never
 * happened leaves its guard at 0 and fails the run.
 * @param {Record<string, Threshold[]>} thresholds
 * @param {string[]} metrics the metrics whose sub-metrics are guarded
 * @param {string} counter the counter that receives a sample with the same tags as each of theirs
 * @returns {{ thresholds: Record<string, Threshold[]>, seeds: Array<Record<string, string>> }}
 */
export function sampleGuards(thresholds, metrics, counter) {
  /** @type {Record<string, Threshold[]>} */
  const guards = {}
  /** @type {Array<Record<string, string>>} */
  const seeds = []
  for (const name of Object.keys(thresholds)) {
    const parsed = parseThresholdName(name)
    if (metrics.indexOf(parsed.metric) < 0 || parsed.tags === undefined) continue
    const tags = parsed.tags
    const filter = Object.keys(tags).map((tag) => `${tag}:${tags[tag]}`).join(",")
    const guard = `${counter}{${filter}}`
    if (guards[guard] !== undefined) continue
    guards[guard] = ["count>0"]
    seeds.push(tags)
  }
  return { thresholds: guards, seeds }
}

/**
 * The thresholds with their guards (sampleGuards) added.
 * @param {Record<string, Threshold[]>} thresholds
 * @param {string[]} metrics
 * @param {string} counter
 * @returns {{ thresholds: Record<string, Threshold[]>, seeds: Array<Record<string, string>> }}
 */
function guarded(thresholds, metrics, counter) {
  const guards = sampleGuards(thresholds, metrics, counter)
  return { thresholds: Object.assign({}, thresholds, guards.thresholds), seeds: guards.seeds }
}

/** load.js: the traffic mix at RATE requests a second for DURATION. */
export function loadSettings() {
  const rate = envPositiveInt("RATE", 20)
  const duration = envDuration("DURATION", "60s")
  const served = guarded(
    {
      // Latency of the requests the API served (429s excluded), all operations together…
      served_req_duration: [`p(95)<${envNumber("P95_MS", 250)}`, `p(99)<${envNumber("P99_MS", 500)}`],
      // …and per operation.
      "served_req_duration{op:list}": [`p(95)<${envNumber("P95_LIST_MS", 250)}`],
      "served_req_duration{op:create}": [`p(95)<${envNumber("P95_CREATE_MS", 300)}`],
      "served_req_duration{op:get}": [`p(95)<${envNumber("P95_GET_MS", 250)}`],
      // Errors: any status but 2xx and 429, and transport failures.
      http_req_failed: [`rate<${envNumber("MAX_ERROR_RATE", 0.01)}`],
      // Too many 429s means the keys cannot carry RATE: the run measured the limiter, not the API.
      rate_limited: [`rate<${envNumber("MAX_429_RATE", 0.02)}`],
      checks: ["rate>0.99"]
    },
    ["served_req_duration"],
    SERVED_REQUESTS
  )
  /** @type {Options} */
  const options = {
    scenarios: {
      load: {
        executor: "constant-arrival-rate",
        rate,
        timeUnit: "1s",
        duration: duration.text,
        preAllocatedVUs: envPositiveInt("VUS", 20),
        maxVUs: envPositiveInt("MAX_VUS", 100)
      }
    },
    thresholds: served.thresholds,
    summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"]
  }
  return {
    baseUrl: baseUrl(),
    keys: apiKeys(),
    rate,
    duration,
    mix: trafficMix(),
    seedPets: envPositiveInt("SEED_PETS", 10),
    guardSeeds: served.seeds,
    options
  }
}

/** stress.js: the mix at a rate climbing from START_RATE to MAX_RATE, cut into BANDS bands. */
export function stressSettings() {
  const startRate = envPositiveInt("START_RATE", 10)
  const maxRate = envPositiveInt("MAX_RATE", 200)
  const ramp = envDuration("RAMP_DURATION", "100s")
  const hold = envDuration("HOLD_DURATION", "0s")
  const bands = envPositiveInt("BANDS", 10)
  const kneeP95 = envNumber("KNEE_P95_MS", 500)
  const kneeErrorRate = envNumber("KNEE_ERROR_RATE", 0.01)
  const abort = envString("ABORT_ON_KNEE") !== "false"
  if (maxRate - startRate < bands) {
    throw new Error(
      `MAX_RATE (${maxRate}) must exceed START_RATE (${startRate}) by at least BANDS (${bands}) requests/s`
    )
  }
  const width = (maxRate - startRate) / bands
  const digits = String(maxRate).length + 1
  /** @param {number} n */
  const pad = (n) => {
    const text = String(Math.floor(n))
    return text.length >= digits ? text : "0".repeat(digits - text.length) + text
  }
  /**
   * @param {number} index band number, 0-based
   * @returns {string} its tag value: the band's rates, `0130-0159`
   */
  const bandLabel = (index) => {
    const low = startRate + index * width
    return `${pad(Math.ceil(low))}-${pad(Math.ceil(low + width) - 1)}`
  }
  /**
   * @param {number} rate a target rate
   * @returns {string} the label of its band
   */
  const bandOf = (rate) => bandLabel(Math.min(bands - 1, Math.max(0, Math.floor((rate - startRate) / width))))

  /** @type {import("k6/options").Stage[]} */
  const stages = [{ duration: ramp.text, target: maxRate }]
  if (hold.seconds > 0) stages.push({ duration: hold.text, target: maxRate })
  /** @type {Record<string, Threshold[]>} */
  const thresholds = {
    // Over the whole run, for the summary; the knee is read from the bands below.
    served_req_duration: [`p(95)<${kneeP95}`],
    http_req_failed: [`rate<${kneeErrorRate}`],
    // Too many 429s means the keys cannot carry MAX_RATE: the knee found would be the limiter's.
    rate_limited: [`rate<${envNumber("MAX_429_RATE", 0.02)}`]
  }
  for (let index = 0; index < bands; index++) {
    const band = bandLabel(index)
    thresholds[`served_req_duration{band:${band}}`] = [{
      threshold: `p(95)<${kneeP95}`,
      abortOnFail: abort,
      delayAbortEval: "5s"
    }]
    thresholds[`http_req_failed{band:${band}}`] = [{
      threshold: `rate<${kneeErrorRate}`,
      abortOnFail: abort,
      delayAbortEval: "5s"
    }]
  }
  const served = guarded(thresholds, ["served_req_duration", "http_req_failed"], SERVED_REQUESTS)
  /** @type {Options} */
  const options = {
    scenarios: {
      stress: {
        executor: "ramping-arrival-rate",
        startRate,
        timeUnit: "1s",
        stages,
        preAllocatedVUs: envPositiveInt("VUS", 20),
        maxVUs: envPositiveInt("MAX_VUS", 300)
      }
    },
    thresholds: served.thresholds,
    summaryTrendStats: ["avg", "med", "max", "p(90)", "p(95)", "p(99)"]
  }
  return {
    baseUrl: baseUrl(),
    keys: apiKeys(),
    startRate,
    maxRate,
    ramp,
    hold,
    mix: trafficMix(),
    seedPets: envPositiveInt("SEED_PETS", 10),
    bandOf,
    guardSeeds: served.seeds,
    options
  }
}

/** soak.js: the mix at a steady RATE, judged by phase, with the server's memory sampled if METRICS_URL is set. */
export function soakSettings() {
  const rate = envPositiveInt("RATE", 10)
  const duration = envDuration("DURATION", "90s")
  const p95 = envNumber("P95_MS", 250)
  const p99 = envNumber("P99_MS", 500)
  const maxErrorRate = envNumber("MAX_ERROR_RATE", 0.01)
  const metricsUrl = envString("METRICS_URL")
  /** @type {Record<string, Scenario>} */
  const scenarios = {
    soak: {
      executor: "constant-arrival-rate",
      rate,
      timeUnit: "1s",
      duration: duration.text,
      // Few VUs, so that each sees enough of the early phase to hold a baseline of its own.
      preAllocatedVUs: envPositiveInt("VUS", 5),
      maxVUs: envPositiveInt("MAX_VUS", 100)
    }
  }
  /** @type {Record<string, Threshold[]>} */
  const thresholds = {
    "served_req_duration{phase:early}": [`p(95)<${p95}`, `p(99)<${p99}`],
    "served_req_duration{phase:late}": [`p(95)<${p95}`, `p(99)<${p99}`],
    http_req_failed: [`rate<${maxErrorRate}`],
    "http_req_failed{phase:late}": [`rate<${maxErrorRate}`],
    latency_drift: [`rate<${envNumber("MAX_DRIFT_RATE", 0.05)}`],
    rate_limited: [`rate<${envNumber("MAX_429_RATE", 0.02)}`],
    checks: ["rate>0.99"]
  }
  if (metricsUrl !== undefined) {
    scenarios.memory = { executor: "constant-vus", vus: 1, duration: duration.text, exec: "sampleMemory" }
    thresholds.server_rss_growth = [`value<${envNumber("MAX_RSS_GROWTH", 1.5)}`]
    // Every sample must read: a growth threshold over no samples would pass vacuously.
    thresholds["checks{scenario:memory}"] = ["rate==1"]
  }
  const served = guarded(thresholds, ["served_req_duration", "http_req_failed"], SERVED_REQUESTS)
  return {
    baseUrl: baseUrl(),
    keys: apiKeys(),
    rate,
    duration,
    mix: trafficMix(),
    seedPets: envPositiveInt("SEED_PETS", 10),
    driftFactor: envNumber("DRIFT_FACTOR", 2),
    driftMinMs: envNumber("DRIFT_MIN_MS", 20),
    metricsUrl,
    metricsToken: envString("METRICS_TOKEN"),
    rssMetric: envString("RSS_METRIC") || "process_resident_memory_bytes",
    sampleInterval: envNumber("SAMPLE_INTERVAL", 5),
    guardSeeds: served.seeds,
    /** @type {Options} */
    options: {
      scenarios,
      thresholds: served.thresholds,
      summaryTrendStats: ["avg", "med", "max", "p(90)", "p(95)", "p(99)"]
    }
  }
}

/** adoption.js: visits at RATE a second, and RUSHES races for one pet. */
export function adoptionSettings() {
  const staffKey = envString("API_KEY_STAFF")
  const deliverShare = envNumber("DELIVER_SHARE", 0.3)
  const rate = envPositiveInt("RATE", 5)
  const duration = envDuration("DURATION", "60s")
  const rushes = envNumber("RUSHES", 5)
  const rushSize = envPositiveInt("RUSH_SIZE", 8)
  if (deliverShare < 0 || deliverShare > 1) {
    throw new Error(`DELIVER_SHARE must be between 0 and 1, got ${deliverShare}`)
  }
  if (!Number.isInteger(rushes) || rushes < 0) throw new Error(`RUSHES must be a whole number ≥ 0, got ${rushes}`)
  if (rushSize < 2) throw new Error(`RUSH_SIZE must be at least 2: a race needs two orders, got ${rushSize}`)
  /** @type {Record<string, Scenario>} */
  const scenarios = {
    adoption: {
      executor: "constant-arrival-rate",
      rate,
      timeUnit: "1s",
      duration: duration.text,
      preAllocatedVUs: envPositiveInt("VUS", 10),
      maxVUs: envPositiveInt("MAX_VUS", 50)
    }
  }
  if (rushes > 0) {
    scenarios.rush = {
      executor: "per-vu-iterations",
      exec: "rush",
      vus: 1,
      iterations: rushes,
      maxDuration: duration.text
    }
  }
  const served = guarded(
    {
      // Every answer was one the flow allows: orders 201 or 409 pet_not_available, closes 200, no 5xx.
      checks: ["rate==1"],
      http_req_failed: [`rate<=${envNumber("MAX_ERROR_RATE", 0)}`],
      // The run adopted something: a run whose every order was refused measured nothing.
      orders_placed: ["count>0"],
      // Every placed order was cancelled or delivered: the run left no pet pending.
      orders_left_open: ["count==0"],
      served_req_duration: [`p(95)<${envNumber("P95_MS", 250)}`, `p(99)<${envNumber("P99_MS", 500)}`],
      "served_req_duration{op:order}": [`p(95)<${envNumber("P95_ORDER_MS", 300)}`],
      "served_req_duration{op:close}": [`p(95)<${envNumber("P95_CLOSE_MS", 300)}`],
      rate_limited: [`rate<${envNumber("MAX_429_RATE", 0.02)}`]
    },
    ["served_req_duration"],
    SERVED_REQUESTS
  )
  return {
    baseUrl: baseUrl(),
    keys: apiKeys(),
    staffKey,
    deliverShare,
    rate,
    duration,
    rushes,
    rushSize,
    seedPets: envPositiveInt("SEED_PETS", 20),
    guardSeeds: served.seeds,
    /** @type {Options} */
    options: {
      scenarios,
      thresholds: served.thresholds,
      summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"]
    }
  }
}

/**
 * The event types a customer of events.js is shown: the pet's, its own orders' placing, their cancelling
 * unless staff deliver every one, their delivering when staff deliver some.
 * @param {boolean} staff whether API_KEY_STAFF is set
 * @param {number} deliverShare DELIVER_SHARE
 * @returns {string[]}
 */
export function storyEventTypes(staff, deliverShare) {
  const types = STORY_EVENT_TYPES.slice()
  if (!staff || deliverShare < 1) types.push("order.cancelled")
  if (staff && deliverShare > 0) types.push("order.delivered")
  return types
}

/** events.js: stories of changes at RATE a second, and WEBHOOK_RATE endpoint lives a minute. */
export function eventsSettings() {
  const staffKey = envString("API_KEY_STAFF")
  const webhookUrl = envString("WEBHOOK_URL") || "https://petstore-load-test.invalid/webhooks"
  const rate = envPositiveInt("RATE", 1)
  const duration = envDuration("DURATION", "60s")
  const deliverShare = envNumber("DELIVER_SHARE", 0.3)
  const staffOrderShare = envNumber("STAFF_ORDER_SHARE", 0.2)
  const pollInterval = envNumber("POLL_INTERVAL", 0.1)
  const eventTimeout = envNumber("EVENT_TIMEOUT", 10)
  const pageSize = envPositiveInt("PAGE_SIZE", 100)
  const webhookRate = envNumber("WEBHOOK_RATE", 20)
  const webhookMaxVus = envPositiveInt("WEBHOOK_MAX_VUS", 4)
  const attemptTimeout = envNumber("ATTEMPT_TIMEOUT", 15)
  const retries = envNumber("RETRIES", 2)
  for (const [name, value] of [["DELIVER_SHARE", deliverShare], ["STAFF_ORDER_SHARE", staffOrderShare]]) {
    if (Number(value) < 0 || Number(value) > 1) throw new Error(`${name} must be between 0 and 1, got ${value}`)
  }
  if (!/^https?:\/\/\S+$/.test(webhookUrl)) {
    throw new Error(`WEBHOOK_URL must be an http(s) URL, got ${JSON.stringify(webhookUrl)}`)
  }
  if (pageSize > 100) throw new Error(`PAGE_SIZE must be at most 100, got ${pageSize}`)
  if (!Number.isInteger(webhookRate) || webhookRate < 0) {
    throw new Error(`WEBHOOK_RATE must be a whole number ≥ 0, got ${webhookRate}`)
  }
  if (webhookMaxVus > MAX_WEBHOOK_ENDPOINTS) {
    throw new Error(`WEBHOOK_MAX_VUS must be at most ${MAX_WEBHOOK_ENDPOINTS}, got ${webhookMaxVus}`)
  }
  if (!Number.isInteger(retries) || retries < 0) throw new Error(`RETRIES must be a whole number ≥ 0, got ${retries}`)
  for (
    const [name, value] of [["POLL_INTERVAL", pollInterval], ["EVENT_TIMEOUT", eventTimeout], [
      "ATTEMPT_TIMEOUT",
      attemptTimeout
    ]]
  ) {
    if (!(Number(value) > 0)) throw new Error(`${name} must be a number of seconds above 0, got ${value}`)
  }

  /** @type {Record<string, Scenario>} */
  const scenarios = {
    changes: {
      executor: "constant-arrival-rate",
      exec: "changes",
      rate,
      timeUnit: "1s",
      duration: duration.text,
      preAllocatedVUs: envPositiveInt("VUS", 5),
      maxVUs: envPositiveInt("MAX_VUS", 30)
    }
  }
  const lagP95 = envNumber("LAG_P95_MS", 1000)
  /** @type {Record<string, Threshold[]>} */
  const thresholds = {
    // Every answer was one its step allows, with the shape the contract gives it.
    checks: ["rate==1"],
    http_req_failed: [`rate<=${envNumber("MAX_ERROR_RATE", 0)}`],
    // Every change's events appeared, once each, and a customer saw no other key's order events.
    events_seen: ["count>0"],
    events_missing: ["count==0"],
    events_duplicated: ["count==0"],
    events_foreign: ["count==0"],
    orders_left_open: ["count==0"],
    event_lag: [`p(95)<${lagP95}`],
    served_req_duration: [`p(95)<${envNumber("P95_MS", 250)}`, `p(99)<${envNumber("P99_MS", 500)}`],
    rate_limited: [`rate<${envNumber("MAX_429_RATE", 0.02)}`]
  }
  // Each type's lag, judged and shown in the summary on its own; events_seen{type} guards it.
  for (const type of storyEventTypes(staffKey !== undefined, deliverShare)) {
    thresholds[`event_lag{type:${type}}`] = [`p(95)<${lagP95}`]
  }
  if (webhookRate > 0) {
    scenarios.webhooks = {
      executor: "constant-arrival-rate",
      exec: "webhooks",
      rate: webhookRate,
      timeUnit: "1m",
      duration: duration.text,
      preAllocatedVUs: Math.min(2, webhookMaxVus),
      maxVUs: webhookMaxVus
    }
    // Some endpoint lived through every step; none was left registered; every test event was attempted.
    thresholds.webhook_endpoint_lives = ["count>0"]
    thresholds.webhook_endpoints_left = ["count==0"]
    thresholds.webhook_tests_unattempted = ["count==0"]
  }
  const seen = guarded(thresholds, ["event_lag"], "events_seen")
  return {
    baseUrl: baseUrl(),
    keys: apiKeys(),
    staffKey,
    webhookUrl,
    receiver: envString("WEBHOOK_URL") !== undefined,
    rate,
    duration,
    deliverShare,
    staffOrderShare,
    pollInterval,
    eventTimeout,
    pageSize,
    webhookRate,
    webhookMaxVus,
    attemptTimeout,
    retries,
    guardSeeds: seen.seeds,
    /** @type {Options} */
    options: {
      scenarios,
      thresholds: seen.thresholds,
      summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"]
    }
  }
}

/** smoke.js: one iteration through every operation and status. */
export function smokeSettings() {
  const url = baseUrl()
  return {
    baseUrl: url,
    origin: originOf(url),
    key: envString("API_KEY_FREE"),
    keyPro: envString("API_KEY_PRO"),
    keyBusiness: envString("API_KEY_BUSINESS"),
    keyBan: envString("API_KEY_BAN"),
    banSeconds: envNumber("BAN_SECONDS", 900),
    /** @type {Options} */
    options: {
      scenarios: {
        smoke: { executor: "per-vu-iterations", vus: 1, iterations: 1, maxDuration: "3m" }
      },
      thresholds: {
        // Every check passed, and every request got the status it expected.
        checks: ["rate==1"],
        http_req_failed: ["rate==0"]
      }
    }
  }
}

/** The variable that holds each plan's key in rate-limits.js. */
export const RATE_LIMIT_KEY_VARIABLES = { free: "API_KEY_FREE", pro: "API_KEY_PRO", business: "API_KEY_BUSINESS" }

/** rate-limits.js: each plan's quota scenario, and the client that honours Retry-After. */
export function rateLimitsSettings() {
  const duration = envDuration("DURATION", "100s")
  const rateFactor = envNumber("RATE_FACTOR", 1.5)
  const windowSlack = envNumber("WINDOW_SLACK", 5)
  const honour = envString("HONOUR") !== "false"

  /** @type {PlanName[]} */
  const planNames = []
  for (const name of (envString("PLANS") || "free,pro,business").split(",")) {
    const plan = name.trim()
    if (plan === "free" || plan === "pro" || plan === "business") planNames.push(plan)
    else if (plan !== "") throw new Error(`PLANS: unknown plan ${JSON.stringify(plan)} (free, pro, business)`)
  }
  /** @type {Partial<Record<PlanName, string | undefined>>} */
  const keys = {}
  for (const plan of planNames) keys[plan] = envString(RATE_LIMIT_KEY_VARIABLES[plan])
  const ownHonourKey = envString("API_KEY_RETRY")
  const firstOfKeys = apiKeys()[0]
  const honourKey = !honour ? undefined : ownHonourKey !== undefined ? ownHonourKey : firstOfKeys
  if (honourKey !== undefined && planNames.some((plan) => keys[plan] === honourKey)) {
    throw new Error("API_KEY_RETRY must be a key of its own: the quota scenarios count every request of theirs")
  }

  // The best-covered window gets at least min(60, DURATION/2) s of traffic; it runs out of quota after
  // 60/RATE_FACTOR s, plus slack for clock skew and latency.
  const neededCoverage = 60 / rateFactor + windowSlack
  if (!(rateFactor > 1 && rateFactor < 2)) throw new Error(`RATE_FACTOR must lie between 1 and 2, got ${rateFactor}`)
  if (Math.min(60, duration.seconds / 2) < neededCoverage) {
    throw new Error(`DURATION must be at least ${Math.ceil(2 * neededCoverage)}s for RATE_FACTOR ${rateFactor}`)
  }
  /** Windows labelled w-1 … wLAST can hold responses of the run (the last one includes the graceful stop). */
  const lastWindow = Math.ceil((duration.seconds + 10 + windowSlack) / 60) + 1
  /** @param {PlanName} plan */
  const ratePerMinute = (plan) => Math.round(PLANS[plan].perMinute * rateFactor)
  for (const plan of planNames) {
    const perMinute = PLANS[plan].perMinute
    const banThreshold = envNumber("BAN_THRESHOLD", perMinute)
    // The server bans a key refused more than BAN_THRESHOLD times in one minute.
    if (ratePerMinute(plan) - perMinute + 1 > banThreshold) {
      throw new Error(
        `${plan}: ${ratePerMinute(plan) - perMinute} refusals a minute would get the key banned ` +
          `(BAN_THRESHOLD ${banThreshold}); lower RATE_FACTOR`
      )
    }
  }

  /** @type {Record<string, Scenario>} */
  const scenarios = {}
  /** @type {Record<string, Threshold[]>} */
  const thresholds = {
    http_req_failed: ["rate==0"],
    checks: ["rate==1"]
  }
  for (const plan of planNames) {
    const perSecond = ratePerMinute(plan) / 60
    scenarios[`quota_${plan}`] = {
      executor: "constant-arrival-rate",
      rate: ratePerMinute(plan),
      timeUnit: "1m",
      duration: duration.text,
      preAllocatedVUs: Math.max(2, Math.ceil(perSecond)),
      maxVUs: Math.max(10, Math.ceil(perSecond * 5)),
      gracefulStop: "5s",
      exec: "quota",
      env: { PLAN: plan },
      tags: { plan }
    }
    const perMinute = PLANS[plan].perMinute
    for (let index = -1; index <= lastWindow; index++) {
      thresholds[`rl_admitted{plan:${plan},window:w${index}}`] = [`count<=${perMinute}`]
    }
    thresholds[`rl_measured_admitted{plan:${plan}}`] = [`count==${perMinute}`]
    thresholds[`rl_measured_refused{plan:${plan}}`] = ["count>0"]
    thresholds[`rl_banned{plan:${plan}}`] = ["count==0"]
  }
  if (honour) {
    scenarios.honour_retry_after = {
      executor: "constant-vus",
      vus: 1,
      duration: duration.text,
      gracefulStop: "5s",
      exec: "honour"
    }
    thresholds.rl_honour_refused = ["count>0"]
    for (let index = -1; index <= lastWindow; index++) {
      thresholds[`rl_honour_refused{window:w${index}}`] = ["count<=1"]
    }
    thresholds.rl_honour_banned = ["count==0"]
  }
  return {
    baseUrl: baseUrl(),
    duration,
    windowSlack,
    honourRps: envNumber("HONOUR_RPS", 10),
    honour,
    planNames,
    keys,
    honourKey,
    lastWindow,
    ratePerMinute,
    /** @type {Options} */
    options: {
      scenarios,
      thresholds,
      // setup may wait for the next minute.
      setupTimeout: "3m"
    }
  }
}
