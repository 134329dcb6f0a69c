import {
  ADMIN_TOKEN,
  apiViolations,
  createTestDatabase,
  optionalToolMissing,
  postgresAdminUrl,
  sqlViolations,
  startServerProcess,
  startWebhookReceiver,
  type StartedProcess,
  type TestDatabase,
  type WebhookReceiver
} from "@petstore/test-support"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { findK6Binaries, inspectK6, type K6Run, k6Version, runK6 as runK6Binary, runLine } from "./k6.ts"

/**
 * Every script on every real k6 binary found (the scripts were last run on v0.49.0, the oldest the README
 * supports, and v2.2.0; CI has no k6, since no registry it reaches serves one), as the README runs them: at
 * the script's own defaults (rates, durations, scenarios), each against a fresh server process on a fresh
 * PostgreSQL database (PGlite in memory without DATABASE_URL), with the keys the README's "How many keys"
 * gives it. A fresh database matters: events.js once failed only on a log that fits on one page, which the
 * runs before it, on a shared server, had long filled.
 * The runs go one after another, never two k6 at once: side by side on two cores they starved each other
 * and the server, and the smoke test's ban, which needs its requests within one minute of the server's
 * clock, and the adoption flow's test failed.
 *
 * The thresholds are the scripts' own, except the latency ones, which judge the machine and not the code:
 * those are set out of reach. Nothing here depends on how fast the machine is.
 */
const binaries = findK6Binaries().map((path) => ({ path, version: k6Version(path) }))

const options = binaries.length === 0
  ? optionalToolMissing(
    "k6 is not installed, so the k6 scripts were not run: install it from Grafana's k6 packages " +
      "(load-tests/README.md, \"Installing k6\") onto PATH, or list k6 binaries in K6_BINS (paths separated by : or ,)"
  )
  : {}

if (binaries.length > 0 && postgresAdminUrl === undefined) {
  if (process.env.CI === "true") {
    throw new Error("CI=true but DATABASE_URL is not set: k6 would not run against PostgreSQL")
  }
  console.warn("DATABASE_URL is not set: the k6 scripts run against the server on PGlite")
}

let receiver: WebhookReceiver | undefined

/** A fresh server on a fresh database for one run, stopped and dropped after it. */
const onFreshServer = async <A>(use: (server: StartedProcess, database: TestDatabase | undefined) => Promise<A>) => {
  const database = postgresAdminUrl === undefined
    ? undefined
    : await createTestDatabase(postgresAdminUrl, "petstore_k6")
  let server: StartedProcess | undefined
  try {
    // events.js registers webhook endpoints at a receiver on loopback, over http: the server must allow both.
    server = await startServerProcess({
      ...(database === undefined ? { DATA_DIR: ":memory:" } : { DATABASE_URL: database.url }),
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true"
    })
    return await use(server, database)
  } finally {
    await server?.server.stop()
    await database?.drop()
  }
}

const baseUrlOf = (server: StartedProcess) => `${server.origin}/v1`

/** Every script of the README, for `k6 inspect`. */
const scripts = ["smoke.js", "rate-limits.js", "load.js", "stress.js", "soak.js", "adoption.js", "events.js"]

/** Every run leaves one line in the log, so CI's output says which k6 ran what, and how it ended. */
const runK6 = async (k6: string, version: string, script: string, env: Record<string, string>, timeoutMs: number) => {
  const run = await runK6Binary(k6, script, env, timeoutMs)
  console.log(runLine(version, script, run))
  return run
}

/** What a failed run shows: k6's summary and any error, never a key (the scripts print none). */
const explain = (script: string, version: string, run: K6Run) =>
  `k6 ${version} run ${script} exited ${String(run.code)}:\n${run.output}`

/** Latency thresholds no healthy run can cross, for the short runs that prove the scripts work. */
const lenientLatency = {
  P95_MS: "60000",
  P99_MS: "60000",
  P95_LIST_MS: "60000",
  P95_CREATE_MS: "60000",
  P95_GET_MS: "60000",
  KNEE_P95_MS: "60000",
  DRIFT_MIN_MS: "60000",
  P95_ORDER_MS: "60000",
  P95_CLOSE_MS: "60000",
  LAG_P95_MS: "60000"
}

describe("the k6 scripts on real k6, against the real server", options, () => {
  beforeAll(async () => {
    receiver = await startWebhookReceiver()
  })

  afterAll(async () => {
    await receiver?.close()
  })

  for (const { path: k6, version } of binaries) {
    it(
      `k6 ${version}: k6 inspect shows every script's options with no variable set, and a run without keys stops in setup`,
      async () => {
        for (const script of scripts) {
          const inspected = await inspectK6(k6, script, {})
          expect(inspected.code, `k6 inspect ${script}:\n${inspected.output}`).toBe(0)
          expect(inspected.output, script).toContain("thresholds")
        }
        // …and a run without its keys stops in setup, before any request, naming the variable (README: 107).
        const run = await runK6(k6, version, "load.js", { BASE_URL: "http://127.0.0.1:9/v1" }, 60_000)
        expect(run.code, explain("load.js", version, run)).toBe(107)
        expect(run.output).toContain("API_KEYS is required")
      },
      180_000
    )

    it(
      `k6 ${version}: rate-limits.js holds every plan's quota exactly, and a client that honours Retry-After is refused at most once a window`,
      () =>
        onFreshServer(async (server) => {
          const env = {
            BASE_URL: baseUrlOf(server),
            API_KEY_FREE: await server.createKey("free"),
            API_KEY_PRO: await server.createKey("pro"),
            API_KEY_BUSINESS: await server.createKey("business"),
            API_KEY_RETRY: await server.createKey("free")
          }
          const run = await runK6(k6, version, "rate-limits.js", env, 240_000)
          const why = explain("rate-limits.js", version, run)
          expect(run.code, why).toBe(0)
          for (const [plan, quota] of [["free", 60], ["pro", 300], ["business", 1000]] as const) {
            expect(run.metrics[`rl_measured_admitted{plan:${plan}}`]?.count, why).toBe(quota)
          }
          expect(run.metrics.rl_honour_refused?.count).toBeGreaterThanOrEqual(1)
          expect(run.metrics.checks?.fails).toBe(0)
        }),
      420_000
    )

    it(
      `k6 ${version}: soak.js at its defaults reads the server's resident memory from GET /metrics on the admin listener`,
      () =>
        onFreshServer(async (server) => {
          const env = {
            BASE_URL: baseUrlOf(server),
            // 10 requests a second for 90 s: 600 a minute, which one business key carries with room.
            API_KEYS: await server.createKey("business"),
            METRICS_URL: `${server.admin}/metrics`,
            METRICS_TOKEN: ADMIN_TOKEN,
            // 90 s tell nothing of a leak, and a young process's heap still grows: the ratio is reported and
            // judged, but only a runaway fails it here.
            MAX_RSS_GROWTH: "4",
            ...lenientLatency
          }
          const run = await runK6(k6, version, "soak.js", env, 240_000)
          const why = explain("soak.js", version, run)
          expect(run.code, why).toBe(0)
          const memoryChecks = run.metrics["checks{scenario:memory}"]
          // A sample every 5 s for 90 s.
          expect(memoryChecks?.passes, why).toBeGreaterThanOrEqual(10)
          expect(memoryChecks?.fails).toBe(0)
          // Bytes, as the server reports them: a live Node.js process holds tens of megabytes at least.
          expect(run.metrics.server_rss_bytes?.value).toBeGreaterThan(10 * 1024 * 1024)
          expect(run.metrics.server_rss_growth?.value).toBeGreaterThan(0)
          expect(run.metrics["served_requests{phase:late}"]?.count ?? 0, why).toBeGreaterThan(0)
        }),
      420_000
    )

    it(
      `k6 ${version}: smoke.js passes every check, every documented status included`,
      () =>
        onFreshServer(async (server) => {
          const env = {
            BASE_URL: baseUrlOf(server),
            API_KEY_FREE: await server.createKey("free"),
            API_KEY_PRO: await server.createKey("pro"),
            API_KEY_BUSINESS: await server.createKey("business"),
            API_KEY_BAN: await server.createKey("free")
          }
          // Its scenario's maxDuration is 3 minutes: k6 stops it then, and this bound only catches a hang.
          const run = await runK6(k6, version, "smoke.js", env, 240_000)
          const why = explain("smoke.js", version, run)
          expect(run.code, why).toBe(0)
          expect(run.metrics.checks?.fails).toBe(0)
          // Every request of the smoke test is one check or more; a run that skipped its groups would have far fewer.
          expect(run.metrics.checks?.passes, why).toBeGreaterThanOrEqual(100)
          expect(run.metrics.http_req_failed?.passes).toBe(0)
        }),
      360_000
    )

    it(
      `k6 ${version}: load.js at its defaults runs its traffic mix, every operation served`,
      () =>
        onFreshServer(async (server) => {
          const env = {
            BASE_URL: baseUrlOf(server),
            // 20 requests a second: 1,200 a minute, two business keys (README "How many keys").
            API_KEYS: [await server.createKey("business"), await server.createKey("business")].join(","),
            ...lenientLatency
          }
          const run = await runK6(k6, version, "load.js", env, 240_000)
          const why = explain("load.js", version, run)
          expect(run.code, why).toBe(0)
          expect(run.metrics.checks?.fails, why).toBe(0)
          for (const op of ["list", "create", "get"]) {
            expect(run.metrics[`served_requests{op:${op}}`]?.count ?? 0, `${op}\n${why}`).toBeGreaterThan(0)
          }
        }),
      360_000
    )

    it(
      `k6 ${version}: stress.js at its defaults climbs every band`,
      () =>
        onFreshServer(async (server) => {
          const env = {
            BASE_URL: baseUrlOf(server),
            // 200 requests a second at the top: the README's one enterprise key.
            API_KEYS: await server.createKey("enterprise", { perMinute: 20_000, perDay: 10_000_000 }),
            ...lenientLatency
          }
          const run = await runK6(k6, version, "stress.js", env, 300_000)
          const why = explain("stress.js", version, run)
          expect(run.code, why).toBe(0)
          // The gauge holds the target rate the executor reached: the top of the ramp.
          expect(run.metrics.stress_target_rate?.max ?? 0, why).toBeGreaterThan(180)
          expect(run.metrics.checks?.fails, why).toBe(0)
          expect(run.metrics.rate_limited?.value ?? 0, why).toBeLessThan(0.02)
        }),
      420_000
    )

    it(
      `k6 ${version}: adoption.js at its defaults orders pets and cancels or delivers every order; each rush for one pet places one order; the store's invariants hold after it`,
      () =>
        onFreshServer(async (server, database) => {
          const staffKey = await server.createKey("pro", undefined, "staff")
          const env = {
            BASE_URL: baseUrlOf(server),
            // 5 visits a second of four requests each: 1,200 a minute, which two business keys carry with room.
            API_KEYS: [await server.createKey("business"), await server.createKey("business")].join(","),
            API_KEY_STAFF: staffKey,
            ...lenientLatency
          }
          const run = await runK6(k6, version, "adoption.js", env, 240_000)
          const why = explain("adoption.js", version, run)
          expect(run.code, why).toBe(0)
          expect(run.metrics.checks?.fails, why).toBe(0)
          expect(run.metrics.http_req_failed?.passes, why).toBe(0)
          const placed = run.metrics.orders_placed?.count ?? 0
          const delivered = run.metrics.orders_delivered?.count ?? 0
          const cancelled = run.metrics.orders_cancelled?.count ?? 0
          expect(delivered, why).toBeGreaterThan(0)
          expect(cancelled, why).toBeGreaterThan(0)
          // Every order the run placed, it closed.
          expect(delivered + cancelled, why).toBe(placed)
          expect(run.metrics.orders_left_open?.count, why).toBe(0)
          // Every rush (5 by default) placed one of its eight orders and refused the other seven.
          expect(run.metrics.rushes_settled?.count, why).toBe(5)
          expect(run.metrics.orders_refused?.count ?? 0, why).toBeGreaterThanOrEqual(5 * 7)
          expect(await apiViolations(baseUrlOf(server), staffKey)).toEqual([])
          if (database !== undefined) expect(await sqlViolations(database.url)).toEqual([])
        }),
      360_000
    )

    it(
      `k6 ${version}: events.js at its defaults, on a fresh log, sees every change's events once, a customer no other key's orders, and manages webhook endpoints to a real receiver`,
      () =>
        onFreshServer(async (server) => {
          // One business key carries the default (README "How many keys").
          const customer = await server.createKey("business")
          const env = {
            BASE_URL: baseUrlOf(server),
            API_KEYS: customer,
            API_KEY_STAFF: await server.createKey("pro", undefined, "staff"),
            WEBHOOK_URL: receiver!.url,
            ...lenientLatency
          }
          const before = receiver!.received.length
          const run = await runK6(k6, version, "events.js", env, 240_000)
          const why = explain("events.js", version, run)
          expect(run.code, why).toBe(0)
          expect(run.metrics.checks?.fails, why).toBe(0)
          expect(run.metrics.http_req_failed?.passes, why).toBe(0)
          expect(run.metrics.events_seen?.count ?? 0, why).toBeGreaterThanOrEqual(10)
          for (
            const metric of [
              "events_missing",
              "events_duplicated",
              "events_foreign",
              "orders_left_open",
              "webhook_endpoints_left"
            ]
          ) {
            expect(run.metrics[metric]?.count, `${metric}\n${why}`).toBe(0)
          }
          // The summary shows each type's lag, as the README says.
          for (const type of ["pet.created", "pet.updated", "order.placed", "order.cancelled", "order.delivered"]) {
            expect(run.metrics[`event_lag{type:${type}}`], `${type}\n${why}`).toBeDefined()
            expect(run.metrics[`events_seen{type:${type}}`]?.count ?? 0, `${type}\n${why}`).toBeGreaterThan(0)
          }
          const lives = run.metrics.webhook_endpoint_lives?.count ?? 0
          expect(lives, why).toBeGreaterThan(0)
          // Every life's test event reached the receiver, sent after the rotation: signed with both secrets.
          const tests = receiver!.received.slice(before).filter((delivery) =>
            (JSON.parse(delivery.body) as { type?: unknown }).type === "webhook.test"
          )
          expect(tests.length, why).toBeGreaterThanOrEqual(lives)
          for (const delivery of tests) {
            expect(delivery.webhookId).toMatch(/^evt_[0-9a-f]{32}$/)
            expect(String(delivery.headers["webhook-signature"]).split(" ").filter((part) => part.startsWith("v1,")))
              .toHaveLength(2)
          }
          // Every endpoint the run registered, it deleted.
          const listed = await fetch(`${baseUrlOf(server)}/webhooks/endpoints`, {
            headers: { Authorization: `Bearer ${customer}` }
          })
          expect(await listed.json()).toEqual([])
        }),
      360_000
    )
  }
})
