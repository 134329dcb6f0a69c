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
 *   MAX_429_RATE         share of iterations refused for quota allowed (default 0.02): more means the keys
 *                        cannot carry MAX_RATE, and the knee found would be the rate limiter's
 *   ABORT_ON_KNEE        false to run the whole ramp even past the knee (default true)
 */
import http from "k6/http"
import exec from "k6/execution"
import { Gauge } from "k6/metrics"
import { requireKeys } from "./lib/config.js"
import { stressSettings } from "./lib/options.js"
import { mixedIteration, seedGuards, seedPets, verifyKeys, warnOnCapacity } from "./lib/traffic.js"

const SETTINGS = stressSettings()
const BASE_URL = SETTINGS.baseUrl
const KEYS = SETTINGS.keys
const START_RATE = SETTINGS.startRate
const MAX_RATE = SETTINGS.maxRate
const RAMP = SETTINGS.ramp
const MIX = SETTINGS.mix

/** The target rate reached, as the executor schedules it. */
const targetRate = new Gauge("stress_target_rate")

http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

export function setup() {
  requireKeys(KEYS)
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, MAX_RATE, RAMP.seconds + SETTINGS.hold.seconds)
  seedGuards(SETTINGS.guardSeeds)
  return { seedIds: seedPets(BASE_URL, KEYS[0] || "", SETTINGS.seedPets) }
}

/** @param {{ seedIds: number[] }} data */
export default function(data) {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000
  const rate = elapsed >= RAMP.seconds ? MAX_RATE : START_RATE + (MAX_RATE - START_RATE) * (elapsed / RAMP.seconds)
  targetRate.add(rate)
  mixedIteration({
    baseUrl: BASE_URL,
    keys: KEYS,
    mix: MIX,
    seedIds: data.seedIds,
    tags: { band: SETTINGS.bandOf(rate) }
  })
}
