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
import { requireKeys } from "./lib/config.js"
import { loadSettings } from "./lib/options.js"
import { mixedIteration, seedGuards, seedPets, verifyKeys, warnOnCapacity } from "./lib/traffic.js"

const SETTINGS = loadSettings()
const BASE_URL = SETTINGS.baseUrl
const KEYS = SETTINGS.keys
const RATE = SETTINGS.rate
const DURATION = SETTINGS.duration
const MIX = SETTINGS.mix

// 2xx and the expected 429s are successes: http_req_failed counts only real errors.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

export function setup() {
  requireKeys(KEYS)
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, RATE, DURATION.seconds)
  seedGuards(SETTINGS.guardSeeds)
  return { seedIds: seedPets(BASE_URL, KEYS[0] || "", SETTINGS.seedPets) }
}

/** @param {{ seedIds: number[] }} data */
export default function(data) {
  mixedIteration({ baseUrl: BASE_URL, keys: KEYS, mix: MIX, seedIds: data.seedIds })
}
