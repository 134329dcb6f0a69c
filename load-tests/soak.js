// @ts-check
/**
 * soak.js — a long steady run that watches for latency drift, late errors and (optionally) memory growth.
 *
 *   API_KEYS=psk_a,psk_b,… k6 run -e BASE_URL=http://localhost:8080/v1 load-tests/soak.js              # 90 s, CI-sized
 *   METRICS_URL=http://127.0.0.1:8081/metrics METRICS_TOKEN=… k6 run -e DURATION=2h load-tests/soak.js     # a real soak
 *
 * The load.js mix at a constant RATE for DURATION. The run is cut into phases by elapsed time, and every
 * request and latency sample carries its phase as the tag `phase`: `warmup` (first 10%), `early` (10–30%),
 * `middle` (30–80%) and `late` (last 20%). Drift shows as `late` doing worse than `early`:
 *   - both phases have the same absolute latency thresholds, and the late phase its own error threshold;
 *   - `latency_drift` is the share of late requests slower than their VU's own early p95 times DRIFT_FACTOR
 *     (and at least DRIFT_MIN_MS slower): about 0 when nothing drifts, whatever the absolute latency.
 * With METRICS_URL (the server's Prometheus text endpoint, GET /metrics on its admin listener, e.g.
 * http://127.0.0.1:8081/metrics), a second scenario samples the server's resident memory every SAMPLE_INTERVAL:
 * `server_rss_bytes`, and `server_rss_growth`, its ratio to the sample taken at the end of the warm-up.
 * Without it, sample RSS with `ps` alongside the run (load-tests/README.md shows how).
 *
 * Environment:
 *   BASE_URL, API_KEYS   as in load.js; the keys' daily quotas must carry RATE×DURATION requests
 *   RATE                 requests per second (default 10)
 *   DURATION             how long (default 90s; a real soak is 1h–8h)
 *   VUS, MAX_VUS         pre-allocated and maximum VUs (default 5 and 100)
 *   MIX, SEED_PETS       as in load.js
 *   P95_MS, P99_MS       latency thresholds of the early and of the late phase (default 250 and 500)
 *   MAX_ERROR_RATE       share of failed requests allowed, 429s excluded, overall and in the late phase (default 0.01)
 *   MAX_429_RATE         share of iterations refused for quota allowed (default 0.02)
 *   DRIFT_FACTOR, DRIFT_MIN_MS, MAX_DRIFT_RATE   the latency_drift threshold (defaults 2, 20 and 0.05)
 *   METRICS_URL          optional Prometheus text endpoint; METRICS_TOKEN its bearer token (the admin token), if any
 *   RSS_METRIC           the metric to read there (default process_resident_memory_bytes)
 *   SAMPLE_INTERVAL      seconds between memory samples (default 5)
 *   MAX_RSS_GROWTH       the largest allowed ratio of the last sample to the warm-up one (default 1.5)
 */
import http from "k6/http"
import exec from "k6/execution"
import { check, sleep } from "k6"
import { Gauge, Rate, Trend } from "k6/metrics"
import { requireKeys } from "./lib/config.js"
import { soakSettings } from "./lib/options.js"
import { mixedIteration, seedGuards, seedPets, verifyKeys, warnOnCapacity } from "./lib/traffic.js"

const SETTINGS = soakSettings()
const BASE_URL = SETTINGS.baseUrl
const KEYS = SETTINGS.keys
const RATE = SETTINGS.rate
const DURATION = SETTINGS.duration
const MIX = SETTINGS.mix
const DRIFT_FACTOR = SETTINGS.driftFactor
const DRIFT_MIN_MS = SETTINGS.driftMinMs
const METRICS_URL = SETTINGS.metricsUrl
const METRICS_TOKEN = SETTINGS.metricsToken
const RSS_METRIC = SETTINGS.rssMetric
const SAMPLE_INTERVAL = SETTINGS.sampleInterval

/** Share of late-phase requests slower than their VU's early p95 × DRIFT_FACTOR. */
const latencyDrift = new Rate("latency_drift")
const rssBytes = new Gauge("server_rss_bytes")
const rssGrowth = new Gauge("server_rss_growth")
const rssByPhase = new Trend("server_rss_mb")

http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }, 429))

/** @type {import("k6/options").Options} */
export const options = SETTINGS.options

/** @returns {string} the phase of the run at this moment */
function phase() {
  const elapsed = (Date.now() - exec.scenario.startTime) / 1000 / DURATION.seconds
  return elapsed < 0.1 ? "warmup" : elapsed < 0.3 ? "early" : elapsed < 0.8 ? "middle" : "late"
}

export function setup() {
  requireKeys(KEYS)
  const capacity = verifyKeys(BASE_URL, KEYS)
  warnOnCapacity(capacity, RATE, DURATION.seconds)
  seedGuards(SETTINGS.guardSeeds)
  return { seedIds: seedPets(BASE_URL, KEYS[0] || "", SETTINGS.seedPets) }
}

/** Per-VU: the early phase's latencies, then the p95 computed from them. */
const baseline = {
  /** @type {number[]} */
  early: [],
  /** @type {number | undefined} */
  p95: undefined
}

/** @param {{ seedIds: number[] }} data */
export default function(data) {
  const now = phase()
  const res = mixedIteration({ baseUrl: BASE_URL, keys: KEYS, mix: MIX, seedIds: data.seedIds, tags: { phase: now } })
  if (res === undefined || res.status === 429 || res.status === 0) return
  const duration = res.timings.duration
  if (now === "early") {
    if (baseline.early.length < 5000) baseline.early.push(duration)
  } else if (now === "late") {
    if (baseline.p95 === undefined && baseline.early.length >= 10) {
      const sorted = baseline.early.slice().sort((a, b) => a - b)
      baseline.p95 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]
    }
    // A VU that saw too little of the early phase has no baseline and does not vote.
    if (baseline.p95 !== undefined) {
      latencyDrift.add(duration > Math.max(baseline.p95 * DRIFT_FACTOR, baseline.p95 + DRIFT_MIN_MS))
    }
  }
}

/** Memory scenario state (one VU). */
const memory = {
  /** @type {number | undefined} the sample at the end of the warm-up */
  baseline: undefined
}

/**
 * The memory scenario: one sample of METRICS_URL, then a pause.
 */
export function sampleMemory() {
  const params = METRICS_TOKEN === undefined
    ? { tags: { name: "metrics" } }
    : { tags: { name: "metrics" }, headers: { Authorization: `Bearer ${METRICS_TOKEN}` } }
  const res = http.get(METRICS_URL || "", params)
  const value = res.status === 200 && typeof res.body === "string" ? metricValue(res.body, RSS_METRIC) : undefined
  check(res, { [`metrics: ${RSS_METRIC} is exposed`]: () => value !== undefined })
  if (value !== undefined) {
    const now = phase()
    rssBytes.add(value)
    rssByPhase.add(value / 1048576, { phase: now })
    if (memory.baseline === undefined && now !== "warmup") memory.baseline = value
    if (memory.baseline !== undefined) rssGrowth.add(value / memory.baseline)
  }
  sleep(SAMPLE_INTERVAL)
}

/**
 * The value of a metric in the Prometheus text format (its first sample, whatever its labels).
 * @param {string} text
 * @param {string} name
 * @returns {number | undefined}
 */
function metricValue(text, name) {
  for (const line of text.split("\n")) {
    if (line.indexOf(name) !== 0) continue
    const rest = line.slice(name.length)
    const match = /^(\{[^}]*\})?\s+([-+0-9.eE]+|NaN)(\s|$)/.exec(rest)
    if (match !== null && match[2] !== undefined) {
      const value = Number(match[2])
      if (isFinite(value)) return value
    }
  }
  return undefined
}
