// @ts-check
/**
 * stress.js — finds the knee: the arrival rate past which latency or errors climb.
 *
 *   API_KEYS=psk_a,psk_b,… k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/stress.js
 *
 * The same traffic mix as load.js, at an arrival rate that climbs linearly from START_RATE to MAX_RATE over
 * RAMP_DURATION (then holds MAX_RATE for HOLD_DURATION). The climb is cut into BANDS equal bands of target
 * rate; every request and latency sample carries its band as the tag `band` (e.g. `0130-0159` requests/s),
 * and each band has its own thresholds. The first band whose thresholds fail is the knee. Past the knee
 * the run aborts (abortOnFail) rather than pile on; the gauge `stress_target_rate` shows the target rate
 * the run had reached (its `max`), and `dropped_iterations` counts arrivals k6 could not start because every
 * VU was still waiting for the server.
 *
 * Environment:
 *   BASE_URL, API_KEYS   as in load.js; the keys must carry MAX_RATE×60 requests a minute (enterprise keys
 *                        with high limits, or many business keys)
 *   START_RATE           requests per second at the start (default 10)
 *   MAX_RATE             requests per second at the top (default 200)
 *   RAMP_DURATION        the climb (default 100s)
 *   HOLD_DURATION        time at MAX_RATE after the climb (default 0s)
 *   BANDS                how many bands the climb is cut into (default 10)
 *   VUS, MAX_VUS         pre-allocated and maximum VUs (default 20 and 300)
 *   MIX, SEED_PETS       as in load.js
 *   KNEE_P95_MS          p95 latency a band must stay under (default 500)
 *   KNEE_ERROR_RATE      share of failed requests a band must stay under, 429s excluded (default 0.01)
 *   ABORT_ON_KNEE        false to run the whole ramp even past the knee (default true)
 */
import http from "k6/http"
import exec from "k6/execution"
import { Gauge } from "k6/metrics"
import { apiKeys, baseUrl, envDuration, envNumber, envPositiveInt, envString, trafficMix } from "./lib/config.js"
import { mixedIteration, seedPets, verifyKeys, warnOnCapacity } from "./lib/traffic.js"

const BASE_URL = baseUrl()
const KEYS = apiKeys()
const START_RATE = envPositiveInt("START_RATE", 10)
const MAX_RATE = envPositiveInt("MAX_RATE", 200)
const RAMP = envDuration("RAMP_DURATION", "100s")
const HOLD = envDuration("HOLD_DURATION", "0s")
const BANDS = envPositiveInt("BANDS", 10)
const MIX = trafficMix()
const KNEE_P95_MS = envNumber("KNEE_P95_MS", 500)
const KNEE_ERROR_RATE = envNumber("KNEE_ERROR_RATE", 0.01)
const ABORT = envString("ABORT_ON_KNEE") !== "false"
if (MAX_RATE - START_RATE < BANDS) {
  throw new Error(
    `MAX_RATE (${MAX_RATE}) must exceed START_RATE (${START_RATE}) by at least BANDS (${BANDS}) requests/s`
  )
}

/** The target rate reached, as the executor schedules it. */
const targetRate = new Gauge("stress_target_rate")

http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

const WIDTH = (MAX_RATE - START_RATE) / BANDS
const DIGITS = String(MAX_RATE).length + 1

/**
 * @param {number} n
 * @returns {string}
 */
function pad(n) {
  const text = String(Math.floor(n))
  return text.length >= DIGITS ? text : "0".repeat(DIGITS - text.length) + text
}

/**
 * @param {number} index band number, 0-based
 * @returns {string} its tag value: the band's rates, `0130-0159`
 */
function bandLabel(index) {
  const low = START_RATE + index * WIDTH
  return `${pad(Math.ceil(low))}-${pad(Math.ceil(low + WIDTH) - 1)}`
}

/**
 * @param {number} rate a target rate
 * @returns {string} the label of its band
 */
function bandOf(rate) {
  return bandLabel(Math.min(BANDS - 1, Math.max(0, Math.floor((rate - START_RATE) / WIDTH))))
}

/** @type {import("k6/options").Stage[]} */
const stages = [{ duration: RAMP.text, target: MAX_RATE }]
if (HOLD.seconds > 0) stages.push({ duration: HOLD.text, target: MAX_RATE })

/** @type {Record<string, import("k6/options").Threshold[]>} */
const thresholds = {
  // Over the whole run, for the summary; the knee is read from the bands below.
  served_req_duration: [`p(95)<${KNEE_P95_MS}`],
  http_req_failed: [`rate<${KNEE_ERROR_RATE}`]
}
for (let index = 0; index < BANDS; index++) {
  const band = bandLabel(index)
  thresholds[`served_req_duration{band:${band}}`] = [{
    threshold: `p(95)<${KNEE_P95_MS}`,
    abortOnFail: ABORT,
    delayAbortEval: "5s"
  }]
  thresholds[`http_req_failed{band:${band}}`] = [{
    threshold: `rate<${KNEE_ERROR_RATE}`,
    abortOnFail: ABORT,
    delayAbortEval: "5s"
  }]
}

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: {
    stress: {
      executor: "ramping-arrival-rate",
      startRate: START_RATE,
      timeUnit: "1s",
      stages,
      preAllocatedVUs: envPositiveInt("VUS", 20),
      maxVUs: envPositiveInt("MAX_VUS", 300)
    }
  },
  thresholds,
  summaryTrendStats: ["avg", "med", "max", "p(90)", "p(95)", "p(99)"]
}

export function setup() {
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, MAX_RATE, RAMP.seconds + HOLD.seconds)
  return { seedIds: seedPets(BASE_URL, KEYS[0] || "", envPositiveInt("SEED_PETS", 10)) }
}

/** @param {{ seedIds: number[] }} data */
export default function(data) {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000
  const rate = elapsed >= RAMP.seconds ? MAX_RATE : START_RATE + (MAX_RATE - START_RATE) * (elapsed / RAMP.seconds)
  targetRate.add(rate)
  mixedIteration({ baseUrl: BASE_URL, keys: KEYS, mix: MIX, seedIds: data.seedIds, tags: { band: bandOf(rate) } })
}
