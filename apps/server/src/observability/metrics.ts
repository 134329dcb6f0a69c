import { type Context, Effect, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { createHistogram } from "node:perf_hooks"

const latencyBoundaries = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

const requestsDescription = "Requests answered, by route template and status"
const requestDurationDescription = "Time to answer a request, by route template"
const quotaRefusalsDescription = "Requests refused with 429, by plan and reason (rate_limited or api_key_banned)"
const quotaStoreDurationDescription = "Time the quota store takes to decide, by store"
const quotaStoreAvailable = Metric.gauge("quota_store_available", {
  description: "1 while the shared quota store (Redis) answers, 0 while requests get 503 or the per-process fallback"
})
const quotaStoreOutages = Metric.counter("quota_store_unavailable_total", {
  description: "Times the shared quota store (Redis) became unavailable"
})
const databaseQueriesInFlight = Metric.gauge("database_queries_in_flight", {
  description: "Queries sent to the database and not yet answered (the pool holds DATABASE_POOL_SIZE connections)"
})
const databaseQueryDuration = Metric.histogram("database_query_duration_seconds", {
  description: "Round trip of one database statement",
  boundaries: latencyBoundaries
})

const databaseConnectionsClosed = Metric.counter("database_connections_closed_total", {
  description:
    "Connections to PostgreSQL the server closed itself, by reason: silent (an answer owed did not come in time), " +
    "out_of_protocol (an answer nothing had asked for) or timed_out (a statement on it timed out)"
})
const databaseTimeouts = Metric.counter("database_statement_timeouts_total", {
  description: "Statements given up after the query timeout (the request got a 503)"
})

/**
 * Attributed metrics are made once per attribute set: requests reuse them. Each is a metric of its own with
 * the attributes as its own (the registry keys a series by name and attributes, as for `Metric.withAttributes`),
 * because `Metric.withAttributes` adds the attributes to a copy of the fiber's context on every update: two
 * copies of a context of some eighty services per request, about 6 KiB.
 */
const memo = <M>(make: (key: string) => M) => {
  const made = new Map<string, M>()
  return (key: string) => {
    let metric = made.get(key)
    if (metric === undefined) made.set(key, metric = make(key))
    return metric
  }
}

const requestsBy = memo((key) => {
  const [route, status] = key.split(" ")
  return Metric.counter("http_requests_total", {
    description: requestsDescription,
    attributes: { route: route!, status: status! }
  })
})
const durationBy = memo((route) =>
  Metric.histogram("http_request_duration_seconds", {
    description: requestDurationDescription,
    boundaries: latencyBoundaries,
    attributes: { route }
  })
)
const refusalsBy = memo((key) => {
  const [plan, reason] = key.split(" ")
  return Metric.counter("quota_refusals_total", {
    description: quotaRefusalsDescription,
    attributes: { plan: plan!, reason: reason! }
  })
})
const storeDurationBy = memo((store) =>
  Metric.histogram("quota_store_duration_seconds", {
    description: quotaStoreDurationDescription,
    boundaries: latencyBoundaries,
    attributes: { store }
  })
)

export const recordRequest = (route: string, status: number, seconds: number) =>
  Effect.andThen(Metric.update(requestsBy(`${route} ${status}`), 1), Metric.update(durationBy(route), seconds))

/** `recordRequest`, at once, with the context of the fiber that answered (what `Metric.update` reads): for the request log, which runs on every request. */
export const recordRequestUnsafe = (
  context: Context.Context<never>,
  route: string,
  status: number,
  seconds: number
) => {
  requestsBy(`${route} ${status}`).updateUnsafe(1, context)
  durationBy(route).updateUnsafe(seconds, context)
}

export const recordQuotaRefusal = (plan: string, reason: "rate_limited" | "api_key_banned") =>
  Metric.update(refusalsBy(`${plan} ${reason}`), 1)

export const recordQuotaStoreDuration = (store: string, seconds: number) =>
  Metric.update(storeDurationBy(store), seconds)

/** The quota store became unavailable (`false`) or answers again (`true`). */
export const recordQuotaStoreAvailability = (store: string, available: boolean) =>
  Effect.andThen(
    Metric.update(Metric.withAttributes(quotaStoreAvailable, { store }), available ? 1 : 0),
    available ? Effect.void : Metric.update(Metric.withAttributes(quotaStoreOutages, { store }), 1)
  )

const connectionsClosedBy = memo((reason) => Metric.withAttributes(databaseConnectionsClosed, { reason }))

/** Counts a connection the server closed, from outside any fiber (a socket's timer), with the context the database layer was built in. */
export const recordConnectionClosedUnsafe = (context: Context.Context<never>, reason: string) =>
  connectionsClosedBy(reason).updateUnsafe(1, context)

export const recordStatementTimeout = Metric.update(databaseTimeouts, 1)

/** Wraps one database statement: counts it in flight and times its round trip. */
export const measureQuery = <A, E, R>(query: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    yield* Metric.modify(databaseQueriesInFlight, 1)
    const started = performance.now()
    return yield* query.pipe(
      Effect.ensuring(
        Effect.andThen(
          Metric.modify(databaseQueriesInFlight, -1),
          Metric.update(databaseQueryDuration, (performance.now() - started) / 1000)
        )
      )
    )
  })

// The process's own gauges. Effect's metrics have none, so they are read here, under the names Prometheus'
// Node.js client gives them: dashboards, alerts and load-tests/soak.js know these names.
const residentMemory = Metric.gauge("process_resident_memory_bytes", {
  description: "Resident memory size of the process, in bytes"
})
const heapUsed = Metric.gauge("nodejs_heap_size_used_bytes", { description: "V8 heap in use, in bytes" })
const heapTotal = Metric.gauge("nodejs_heap_size_total_bytes", { description: "V8 heap reserved, in bytes" })
const loopLagMean = Metric.gauge("nodejs_eventloop_lag_mean_seconds", {
  description: "Mean delay of the event loop since the previous scrape, in seconds"
})
const loopLagP99 = Metric.gauge("nodejs_eventloop_lag_p99_seconds", {
  description: "99th percentile of the event loop's delay since the previous scrape, in seconds"
})
const loopLagMax = Metric.gauge("nodejs_eventloop_lag_max_seconds", {
  description: "Longest delay of the event loop since the previous scrape, in seconds"
})

const LOOP_TICK_MS = 10
/**
 * How late the event loop runs a 10 ms timer, recorded at each tick. Node's own
 * `monitorEventLoopDelay` was tried first: on Node 24 it recorded at most ~10 ms for a
 * loop held 300 ms, so it cannot show the stalls this gauge exists for. Started as
 * the module loads, so the first scrape covers the process's life so far; unref'd,
 * so it never keeps the process alive.
 */
const loopDelay = createHistogram()
let lastTick = performance.now()
setInterval(() => {
  const now = performance.now()
  // A histogram records positive integers: nanoseconds, at least 1.
  loopDelay.record(Math.max(1, Math.round((now - lastTick - LOOP_TICK_MS) * 1e6)))
  lastTick = now
}, LOOP_TICK_MS).unref()

const lagSeconds = (nanoseconds: number) => nanoseconds / 1e9

const sampleProcess = Effect.suspend(() => {
  const memory = process.memoryUsage()
  const updates = [
    Metric.update(residentMemory, memory.rss),
    Metric.update(heapUsed, memory.heapUsed),
    Metric.update(heapTotal, memory.heapTotal)
  ]
  // Two scrapes within one tick have no new delays to report: the lag gauges keep their values until one.
  if (loopDelay.count > 0) {
    updates.push(
      Metric.update(loopLagMean, lagSeconds(loopDelay.mean)),
      Metric.update(loopLagP99, lagSeconds(loopDelay.percentile(99))),
      Metric.update(loopLagMax, lagSeconds(loopDelay.max))
    )
    loopDelay.reset()
  }
  return Effect.all(updates, { discard: true })
})

/** What `GET /metrics` answers, in Prometheus' text format; the process gauges are read at each scrape. */
export const prometheusText: Effect.Effect<string> = Effect.andThen(sampleProcess, PrometheusMetrics.format())
