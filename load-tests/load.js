// @ts-check
/**
 * load.js — the expected production mix at a target arrival rate.
 *
 *   API_KEYS=psk_a,psk_b,… k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/load.js
 *
 * Traffic: about 80% GET /v1/pets (a third of them filtered by status, half of them following a
 * `Link: rel="next"` from an earlier page), 15% POST /v1/pets and 5% GET /v1/pets/{petId}, one request per
 * iteration, round-robin over the keys of API_KEYS.
 *
 * Environment:
 *   BASE_URL      API address including /v1 (default http://localhost:8080/v1)
 *   API_KEYS      comma-separated keys, required; together they must allow RATE×60 requests a minute
 *   RATE          iterations (requests) per second (default 20)
 *   DURATION      how long (default 60s)
 *   VUS, MAX_VUS  pre-allocated and maximum VUs (default 20 and 100)
 *   MIX           list,create,get weights (default 80,15,5)
 *   SEED_PETS     pets created in setup for getPet (default 10)
 *   P95_MS, P99_MS, P95_LIST_MS, P95_CREATE_MS, P95_GET_MS   latency thresholds (defaults 250, 500, 250, 300, 250)
 *   MAX_ERROR_RATE   share of failed requests allowed, 429s excluded (default 0.01)
 *   MAX_429_RATE     share of iterations refused for quota allowed (default 0.02)
 */
import http from "k6/http"
import { apiKeys, baseUrl, envDuration, envNumber, envPositiveInt, trafficMix } from "./lib/config.js"
import { mixedIteration, seedPets, verifyKeys, warnOnCapacity } from "./lib/traffic.js"

const BASE_URL = baseUrl()
const KEYS = apiKeys()
const RATE = envPositiveInt("RATE", 20)
const DURATION = envDuration("DURATION", "60s")
const MIX = trafficMix()

// 2xx and the expected 429s are successes: http_req_failed counts only real errors.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: {
    load: {
      executor: "constant-arrival-rate",
      rate: RATE,
      timeUnit: "1s",
      duration: DURATION.text,
      preAllocatedVUs: envPositiveInt("VUS", 20),
      maxVUs: envPositiveInt("MAX_VUS", 100)
    }
  },
  thresholds: {
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
  summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"]
}

export function setup() {
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, RATE, DURATION.seconds)
  return { seedIds: seedPets(BASE_URL, KEYS[0] || "", envPositiveInt("SEED_PETS", 10)) }
}

/** @param {{ seedIds: number[] }} data */
export default function(data) {
  mixedIteration({ baseUrl: BASE_URL, keys: KEYS, mix: MIX, seedIds: data.seedIds })
}
