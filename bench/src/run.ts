/**
 * `pnpm bench`: the server against two floors (./floor.ts) on PostgreSQL, in
 * one run, alternating, after a warm-up: the floor with a key lookup and a
 * quota statement, and the plain floor with neither. Reports requests per
 * server CPU-second (the stable figure on a noisy machine), req/s and latency
 * at 64 connections, then the in-memory quota store and WORKERS=2 against
 * WORKERS=1. The server runs as the targets ask: request logging on
 * (LOG_LEVEL=Info, to a file), metrics, exact PostgreSQL quotas.
 *
 * Endpoints: list, create, get and order (POST /v1/store/orders). Every order
 * takes a pet of its own, in id order, from a pool of available pets created up
 * front beside the 10,000: only placements are measured, none is refused.
 *
 * Flags: --soak adds a steady run that samples resident memory every 10 s;
 * --quick measures only the list endpoint (or BENCH_ENDPOINTS, e.g.
 * `list,create,get,order`; server and both floors), for iterating; --profile runs the server under `node --cpu-prof` for one list
 * run and prints where the profile is. `--growth` is ./growth.ts's, `--docs` ./docs.ts's,
 * `--redis-growth` ./redisQuotaGrowth.ts's. With
 * BENCH_BASELINE set to another server's main.ts (e.g. an older commit's tree,
 * checked out inside the repository so that it resolves the same packages),
 * --quick measures it too, alternating: an A/B of two versions under the same
 * load, whatever else the machine is doing.
 *
 * Environment: DATABASE_URL (a database to create the bench database from;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ROUNDS (3),
 * BENCH_SECONDS (8), BENCH_SOAK_SECONDS (300), BENCH_SOAK_RATE (1000 req/s),
 * BENCH_SERVER_NODE_OPTIONS (Node flags for the server processes; default the
 * ones `pnpm start` ships, read from the root package.json; set empty for none).
 */
import { builtServerEntry, createKey, createTestDatabase, type ServerProcess } from "@petstore/test-support"
import autocannon from "autocannon"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { cpuSeconds, logDir, rssMiB, startLogged } from "./processes.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const soak = process.argv.includes("--soak")
const quick = process.argv.includes("--quick")
const profile = process.argv.includes("--profile")
/**
 * The Node flags `pnpm start` gives the server (the heap sizing of README "Memory"), read from the root
 * package.json's `start` script, so that the bench measures the defaults operators run.
 */
const shippedNodeOptions = (() => {
  const { scripts } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
  const flags = /NODE_OPTIONS=\\?"([^"$]*)/.exec(scripts.start)?.[1]
  if (flags === undefined) throw new Error("the root package.json's start script gives no NODE_OPTIONS defaults")
  return flags.trim()
})()
/** Node flags for every server process, e.g. heap sizing (`--max-semi-space-size=8`): BENCH_SERVER_NODE_OPTIONS. */
const serverNodeOptions = (process.env.BENCH_SERVER_NODE_OPTIONS ?? shippedNodeOptions).split(" ").filter(Boolean)
const soakSeconds = Number(process.env.BENCH_SOAK_SECONDS ?? 300)
const soakRate = Number(process.env.BENCH_SOAK_RATE ?? 1000)
const CONNECTIONS = 64
const serverMain = builtServerEntry(import.meta.url)
const floorMain = fileURLToPath(new URL("./floor.ts", import.meta.url))
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))

type Endpoint = "list" | "create" | "get" | "order"
const endpoints: ReadonlyArray<Endpoint> = ["list", "create", "get", "order"]
const routeOf: Record<Endpoint, string> = {
  list: "GET /v1/pets?limit=20",
  create: "POST /v1/pets",
  get: "GET /v1/pets/{id}",
  order: "POST /v1/store/orders"
}

/**
 * Pets that orders take, one each, in id order, never given twice: more than every target together places in a
 * full run. Never refilled during the run: a request still in flight when autocannon stops would place its order
 * after any refill, on a pet made available again.
 */
const ORDER_POOL = 300_000
interface OrderPool {
  readonly first: number
  readonly last: number
  next: number
}

interface Measure {
  readonly requests: number
  readonly cpu: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

const requestsFor = (endpoint: Endpoint, key: string, pool: OrderPool) => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  switch (endpoint) {
    case "order":
      // Past the pool's end every order asks for its last pet, already pending: 409s, which invalidate the row.
      return [{
        method: "POST" as const,
        path: "/v1/store/orders",
        headers,
        setupRequest: (request: { body?: string }) => ({
          ...request,
          body: JSON.stringify({ petId: pool.next <= pool.last ? pool.next++ : pool.last })
        })
      }]
    case "list":
      return [{ method: "GET" as const, path: "/v1/pets?limit=20", headers }]
    case "create":
      return [{
        method: "POST" as const,
        path: "/v1/pets",
        headers,
        body: JSON.stringify({ name: "Bench", categoryId: 1 })
      }]
    case "get":
      return [{
        method: "GET" as const,
        headers,
        setupRequest: (request: { path: string }) => ({
          ...request,
          path: `/v1/pets/${1 + Math.floor(Math.random() * 10_000)}`
        })
      }]
  }
}

/** A process serving HTTP at `origin`: the server, or the floor. */
interface Target {
  readonly server: ServerProcess
  readonly origin: string
}

const measure = async (
  target: Target,
  endpoint: Endpoint,
  key: string,
  duration: number,
  pool: OrderPool
): Promise<Measure> => {
  const cpuBefore = cpuSeconds(target.server.child.pid!)
  const result = await autocannon({
    url: target.origin,
    connections: CONNECTIONS,
    duration,
    requests: requestsFor(endpoint, key, pool) as Array<autocannon.Request>
  })
  const cpu = cpuSeconds(target.server.child.pid!) - cpuBefore
  return {
    requests: result.requests.total,
    cpu,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts
  }
}

const combine = (measures: ReadonlyArray<Measure>): Measure => {
  const sorted = (pick: (m: Measure) => number) => measures.map(pick).sort((a, b) => a - b)
  const median = (pick: (m: Measure) => number) => sorted(pick)[Math.floor(measures.length / 2)]!
  return {
    requests: measures.reduce((sum, m) => sum + m.requests, 0),
    cpu: measures.reduce((sum, m) => sum + m.cpu, 0),
    rps: median((m) => m.rps),
    p50: median((m) => m.p50),
    p99: median((m) => m.p99),
    errors: measures.reduce((sum, m) => sum + m.errors, 0)
  }
}

const perCpuSecond = (m: Measure) => m.requests / m.cpu

const main = async () => {
  const database = await createTestDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    "petstore_bench"
  )
  const databaseUrl = database.url
  const started: Array<ServerProcess> = []
  const starting = (label: string) => process.stdout.write(`starting ${label}… `)
  /** The server, ready when its /readyz answers, with an admin listener of its own; its log goes to a file. */
  const startServer = async (
    label: string,
    env: Record<string, string>,
    extraNodeOptions: ReadonlyArray<string> = []
  ) => {
    starting(label)
    const nodeOptions = [...serverNodeOptions, ...extraNodeOptions]
    // glibc's malloc arenas are set by the environment, not by a flag: MALLOC_ARENA_MAX reaches the server.
    const mallocArenas = process.env.MALLOC_ARENA_MAX === undefined
      ? {}
      : { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX }
    const target = await startLogged(label, serverMain, { DATABASE_URL: databaseUrl, ...mallocArenas, ...env }, {
      nodeOptions
    })
    started.push(target.server)
    console.log("ready")
    return target
  }
  /** A floor has no /readyz: it is ready when it answers at all. */
  const startFloor = async (plain: boolean, keyId: string): Promise<Target> => {
    starting(
      plain ? "plain floor (node:http + postgres.js, no key, no quota)" : "floor (node:http + postgres.js, key + quota)"
    )
    const env = { DATABASE_URL: databaseUrl, FLOOR_PLAIN: plain ? "1" : "0", FLOOR_KEY_ID: keyId }
    const target = await startLogged(plain ? "plain" : "floor", floorMain, env, {
      readyPath: "/v1/pets",
      ready: (status) => status < 500
    })
    started.push(target.server)
    console.log("ready")
    return target
  }
  try {
    const server = await startServer("server (PostgreSQL quota store)", {})
    // Resident memory 10 s after start-up, before any request but the readiness probe: the idle budget.
    await new Promise((resolve) => setTimeout(resolve, 10_000))
    const idleRss = rssMiB(server.server.child.pid!)
    console.log(
      `server RSS 10 s after start-up: ${idleRss.toFixed(0)} MiB (budget ${IDLE_MEMORY_TARGET_MIB} MiB); Node flags: ${
        serverNodeOptions.join(" ") || "none"
      }`
    )
    const db = postgres(databaseUrl, { max: 1, onnotice: () => {} })
    await db`INSERT INTO pets (name, category_id, status)
      SELECT 'Pet ' || g, 1 + g % 10, (ARRAY['available', 'pending', 'sold'])[1 + g % 3] FROM generate_series(1, 10000) AS g`
    const [poolIds] = await db`WITH pool AS (
        INSERT INTO pets (name, category_id, status)
        SELECT 'Order pool ' || g, 1, 'available' FROM generate_series(1, ${ORDER_POOL}::integer) AS g
        RETURNING id
      ) SELECT min(id)::integer AS first, max(id)::integer AS last FROM pool` as unknown as [
      { first: number; last: number }
    ]
    if (poolIds.last - poolIds.first + 1 !== ORDER_POOL) {
      throw new Error(`the order pool's ids are not contiguous: ${poolIds.first}–${poolIds.last}`)
    }
    const pool: OrderPool = { first: poolIds.first, last: poolIds.last, next: poolIds.first }
    await db`VACUUM ANALYZE pets`
    const run = (target: Target, endpoint: Endpoint, duration: number) => measure(target, endpoint, key, duration, pool)
    const { id: keyId, key } = await createKey(server.admin, "enterprise", {
      perMinute: 2_000_000_000,
      perDay: 2_000_000_000
    })
    const [{ version: pgVersion }] = await db`SELECT current_setting('server_version') AS version` as unknown as [
      { version: string }
    ]

    const floor = await startFloor(false, keyId)
    const plainFloor = await startFloor(true, keyId)
    const load = () => loadavg().map((l) => l.toFixed(1)).join(" ")
    const loadAtStart = load()

    const results = new Map<string, Array<Measure>>()
    const record = (label: string, m: Measure) => results.set(label, [...(results.get(label) ?? []), m])
    const show = (round: number, label: string, endpoint: Endpoint, m: Measure) =>
      console.log(
        `round ${round} ${label.padEnd(8)} ${endpoint.padEnd(6)} ${m.rps.toFixed(0).padStart(6)} req/s  ${
          perCpuSecond(m).toFixed(0).padStart(6)
        } req/CPU-s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors}  load ${load()}`
      )

    if (profile) {
      // A second server under --cpu-prof, measured on list; the profile is written when it stops.
      const profileDir = `${logDir}/profile`
      const profiled = await startServer("server under --cpu-prof", {}, ["--cpu-prof", `--cpu-prof-dir=${profileDir}`])
      await run(profiled, "list", 3)
      const m = await run(profiled, "list", seconds)
      show(1, "profiled", "list", m)
      await profiled.server.stop()
      console.log(`profile in ${profileDir}, server log ${profiled.logFile}`)
      return
    }

    const measured: ReadonlyArray<Endpoint> = quick
      ? (process.env.BENCH_ENDPOINTS ?? "list").split(",").filter((e): e is Endpoint =>
        endpoints.includes(e as Endpoint)
      )
      : endpoints
    const baselineMain = quick ? process.env.BENCH_BASELINE : undefined
    const baseline = baselineMain === undefined
      ? []
      : [["baseline", await startLogged("baseline", baselineMain, { DATABASE_URL: databaseUrl })] as const]
    for (const [, target] of baseline) started.push(target.server)
    const targets: ReadonlyArray<readonly [string, Target]> = [["server", server], ...baseline, ["floor", floor], [
      "plain",
      plainFloor
    ]]
    console.log(`warming up (${measured.length * targets.length} × 3 s)`)
    for (const endpoint of measured) for (const [, target] of targets) await run(target, endpoint, 3)

    for (let round = 1; round <= rounds; round++) {
      for (const endpoint of measured) {
        for (const [label, target] of targets) {
          const m = await run(target, endpoint, seconds)
          record(`${label} ${endpoint}`, m)
          show(round, label, endpoint, m)
        }
      }
    }
    if (!quick) {
      const memory = await startServer("server (in-memory quota store)", { QUOTA_STORE: "memory" })
      for (const endpoint of endpoints) await run(memory, endpoint, 3)
      for (let round = 1; round <= Math.max(1, rounds - 1); round++) {
        for (const endpoint of endpoints) {
          const m = await run(memory, endpoint, seconds)
          record(`memory ${endpoint}`, m)
          show(round, "memory", endpoint, m)
        }
      }
      await memory.server.stop()
      const workers = await startServer("server WORKERS=2", { WORKERS: "2" })
      for (let round = 1; round <= Math.max(1, rounds - 1); round++) {
        for (const [label, target] of [["workers1", server], ["workers2", workers]] as const) {
          const m = await run(target, "list", seconds)
          record(`${label} list`, m)
          show(round, label, "list", m)
        }
      }
      await workers.server.stop()
    }
    console.log(
      `server RSS after the runs: ${rssMiB(server.server.child.pid!).toFixed(0)} MiB; its log: ${
        (server.logBytes() / 2 ** 20).toFixed(0)
      } MiB in ${server.logFile}`
    )

    let soakSamples: Array<{ at: number; rss: number; p99: number }> = []
    if (soak) {
      console.log(`soak: ${soakSeconds} s at ${soakRate} req/s of list`)
      soakSamples = await soakRun(server, key)
    }

    const effectVersion = JSON.parse(
      readFileSync(
        fileURLToPath(new URL("../../node_modules/.pnpm/node_modules/effect/package.json", import.meta.url)),
        "utf8"
      )
    ).version
    const autocannonVersion = JSON.parse(
      readFileSync(fileURLToPath(new URL("../node_modules/autocannon/package.json", import.meta.url)), "utf8")
    ).version
    if (quick) {
      const ratio = (a: string, b: string) =>
        (perCpuSecond(combine(results.get(a)!)) / perCpuSecond(combine(results.get(b)!))).toFixed(2)
      console.log(`load at start ${loadAtStart}, at end ${load()}`)
      for (const endpoint of measured) {
        const of = (label: string) => `${label} ${endpoint}`
        console.log(
          `${endpoint}: server ${ratio(of("server"), of("floor"))}× the floor, ${
            ratio(of("server"), of("plain"))
          }× the plain floor` +
            (results.has(of("baseline"))
              ? `; baseline ${ratio(of("baseline"), of("floor"))}× the floor, ${
                ratio(of("baseline"), of("plain"))
              }× the plain floor; server ${ratio(of("server"), of("baseline"))}× the baseline`
              : "") +
            " (req per CPU-s)"
        )
      }
    } else {
      writeFileSync(
        resultsFile,
        report({
          results,
          pgVersion,
          effectVersion,
          autocannonVersion,
          soakSamples,
          idleRss,
          loadAtStart,
          loadAtEnd: load()
        }) +
          keptAnalysis()
      )
      console.log(`wrote ${resultsFile}`)
    }
    await db.end()
  } finally {
    for (const target of started) await target.stop().catch(() => {})
    await database.drop()
  }
}

/** The hand-written analysis below this marker in RESULTS.md survives a new run; the tables above it are replaced. */
const ANALYSIS_MARKER = "<!-- analysis: kept across runs -->"
const keptAnalysis = () => {
  try {
    const previous = readFileSync(resultsFile, "utf8")
    const at = previous.indexOf(ANALYSIS_MARKER)
    return at === -1 ? `\n${ANALYSIS_MARKER}\n` : `\n${previous.slice(at)}`
  } catch {
    return `\n${ANALYSIS_MARKER}\n`
  }
}

/** A steady rate for a long while, sampling the server's resident memory every 10 s. */
const soakRun = async (server: Target, key: string) => {
  const samples: Array<{ at: number; rss: number; p99: number }> = []
  const begin = Date.now()
  const pid = server.server.child.pid!
  const sampler = setInterval(
    () => samples.push({ at: Math.round((Date.now() - begin) / 1000), rss: rssMiB(pid), p99: 0 }),
    10_000
  )
  const cpuBefore = cpuSeconds(pid)
  const result = await autocannon({
    url: server.origin,
    connections: CONNECTIONS,
    duration: soakSeconds,
    overallRate: soakRate,
    requests: requestsFor("list", key, { first: 0, last: 0, next: 0 }) as Array<autocannon.Request>
  })
  clearInterval(sampler)
  const cpu = cpuSeconds(pid) - cpuBefore
  // At a fixed rate the server is not saturated, so its CPU per request is the cost of a memory setting.
  console.log(
    `soak: ${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, non-2xx ${
      result.non2xx + result.errors + result.timeouts
    }; ` +
      `server CPU ${(1000 * cpu / result.requests.total).toFixed(3)} s per 1,000 requests (${
        (result.requests.total / cpu).toFixed(0)
      } req per CPU-s); ` +
      `RSS MiB every 10 s: ${samples.map((sample) => sample.rss.toFixed(0)).join(" ")}; ` +
      `peak ${soakRss(samples).peak.toFixed(0)}, steady ${
        soakRss(samples).steady.toFixed(0)
      } MiB against a budget of ${MEMORY_TARGET_MIB} MiB`
  )
  return samples
}

/**
 * What create and get must keep, at least: their ratios to the floor before issue 15's work (commit 7f46a1e),
 * measured as this bench now measures, with request logging on, in one A/B run (RESULTS.md, "Issue 15"). The
 * 1.10× and 1.14× the earlier RESULTS.md showed were measured with the server's request log off. Order
 * placement: its ratio in the full run that first measured it (RESULTS.md, "Orders").
 */
const KEPT_RATIOS = { create: 0.92, get: 0.78, order: 0.98 } as const
const MEMORY_TARGET_MIB = 200
/** Issue 35's budget for the server 10 s after start-up, the docs page not yet visited. */
const IDLE_MEMORY_TARGET_MIB = 100

/** The soak's peak, and its steady state: the median of the samples in its second half. */
const soakRss = (samples: ReadonlyArray<{ readonly rss: number }>) => {
  const steady = samples.slice(Math.floor(samples.length / 2)).map((sample) => sample.rss).sort((a, b) => a - b)
  return {
    peak: Math.max(0, ...samples.map((sample) => sample.rss)),
    steady: steady[Math.floor(steady.length / 2)] ?? 0
  }
}
const P99_TARGET_MS = 25
const PLAIN_TARGET = 0.45

const report = (input: {
  readonly results: Map<string, Array<Measure>>
  readonly pgVersion: string
  readonly effectVersion: string
  readonly autocannonVersion: string
  readonly soakSamples: ReadonlyArray<{ at: number; rss: number }>
  readonly idleRss: number
  readonly loadAtStart: string
  readonly loadAtEnd: string
}) => {
  const get = (label: string) => combine(input.results.get(label) ?? [])
  const ratioOf = (m: Measure, base: Measure) => perCpuSecond(m) / perCpuSecond(base)
  const row = (label: string, m: Measure, floor?: Measure, plain?: Measure) =>
    `| ${label} | ${perCpuSecond(m).toFixed(0)} | ${
      floor ? ratioOf(m, floor).toFixed(2) + "×" : label.startsWith("plain") ? "—" : "1.00×"
    } | ${plain ? ratioOf(m, plain).toFixed(2) + "×" : "—"} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${m.errors} |`
  const lines = [
    "# Benchmark results",
    "",
    `Measured by \`pnpm bench\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${
      cpus()[0]?.model.trim()
    }), ` +
    `${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.versions.node}, effect ${input.effectVersion}, ` +
    `PostgreSQL ${input.pgVersion} on the same machine, autocannon ${input.autocannonVersion}. ` +
    `${CONNECTIONS} connections, ${rounds} rounds of ${seconds} s per target and endpoint, alternating, after a 3 s warm-up. ` +
    `The database holds 10,000 pets, and ${
      ORDER_POOL.toLocaleString("en")
    } more created available up front, which the orders take, one each; ` +
    "the key's quota is too high to bind, but every request still spends it. " +
    "The server runs with request logging (LOG_LEVEL=Info, one JSON line per request, to a file), metrics and the PostgreSQL quota store. " +
    `Load average (1, 5, 15 min) at the start: ${input.loadAtStart}; at the end: ${input.loadAtEnd}.` +
    (serverNodeOptions.length > 0 ? ` Server Node flags: \`${serverNodeOptions.join(" ")}\`.` : ""),
    "",
    "Requests per CPU-second divides the requests served by the CPU time (user + system) the server process used",
    "meanwhile, read from /proc: the load generator and PostgreSQL share the machine, so req/s moves with them and",
    "this figure does not. req/s, p50 and p99 are medians over the rounds. \"floor\" is node:http + postgres.js with",
    "the key lookup and the quota statement; \"plain\" is node:http + postgres.js with neither (the issue's plain floor).",
    "",
    "## Server (PostgreSQL quota store) against the floors",
    "",
    "| target | req per CPU-s | vs floor | vs plain floor | req/s | p50 ms | p99 ms | non-2xx |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
  ]
  for (const endpoint of endpoints) {
    const floor = get(`floor ${endpoint}`)
    const plain = get(`plain ${endpoint}`)
    lines.push(
      row(`plain ${endpoint}`, plain, undefined),
      row(`floor ${endpoint}`, floor, undefined, plain),
      row(`server ${endpoint}`, get(`server ${endpoint}`), floor, plain)
    )
  }
  const ratio = (endpoint: Endpoint, base: "floor" | "plain") =>
    ratioOf(get(`server ${endpoint}`), get(`${base} ${endpoint}`))
  const verdict = (met: boolean) => met ? "met" : "missed"
  const { peak: peakRss, steady: steadyRss } = soakRss(input.soakSamples)
  lines.push(
    "",
    "### Against the targets",
    "",
    `- Requests per server CPU-second, GET /v1/pets?limit=20: ${
      ratio("list", "plain").toFixed(2)
    }× the plain floor against a target of at least ${PLAIN_TARGET}×: ${
      verdict(ratio("list", "plain") >= PLAIN_TARGET)
    }` +
      `; ${ratio("list", "floor").toFixed(2)}× the floor (key + quota).`,
    ...(["create", "get", "order"] as const).map((endpoint) =>
      `- Requests per server CPU-second, ${routeOf[endpoint]}: ${ratio(endpoint, "floor").toFixed(2)}× the floor ` +
      `(${ratio(endpoint, "plain").toFixed(2)}× the plain floor) against at least the ${
        KEPT_RATIOS[endpoint].toFixed(2)
      }× measured before: ${verdict(ratio(endpoint, "floor") >= KEPT_RATIOS[endpoint])}.`
    ),
    ...endpoints.map((endpoint) => {
      const p99 = get(`server ${endpoint}`).p99
      return `- p99 of the server, ${endpoint}, at ${CONNECTIONS} connections: ${p99} ms against a target of at most ${P99_TARGET_MS} ms: ${
        verdict(p99 <= P99_TARGET_MS)
      }.`
    }),
    `- Resident memory 10 s after start-up: ${
      input.idleRss.toFixed(0)
    } MiB against a budget of at most ${IDLE_MEMORY_TARGET_MIB} MiB: ${
      verdict(input.idleRss <= IDLE_MEMORY_TARGET_MIB)
    }.`,
    input.soakSamples.length > 0
      ? `- Resident memory under the soak: peak ${peakRss.toFixed(0)} MiB, steady ${
        steadyRss.toFixed(0)
      } MiB against a budget of at most ${MEMORY_TARGET_MIB} MiB: ${verdict(peakRss <= MEMORY_TARGET_MIB)}.`
      : "- Resident memory under the soak: not measured in this run (`pnpm bench --soak`)."
  )
  lines.push(
    "",
    "## In-memory quota store",
    "",
    "| target | req per CPU-s | vs floor | vs plain floor | req/s | p50 ms | p99 ms | non-2xx |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
  )
  for (const endpoint of endpoints) {
    lines.push(row(`memory ${endpoint}`, get(`memory ${endpoint}`), get(`floor ${endpoint}`), get(`plain ${endpoint}`)))
  }
  lines.push(
    "",
    "## WORKERS=2 against WORKERS=1 (GET /v1/pets?limit=20)",
    "",
    "CPU of WORKERS=2 counts the primary and both workers.",
    "",
    "| target | req per CPU-s | vs WORKERS=1 | — | req/s | p50 ms | p99 ms | non-2xx |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
  )
  lines.push(row("WORKERS=1", get("workers1 list")), row("WORKERS=2", get("workers2 list"), get("workers1 list")))
  if (input.soakSamples.length > 0) {
    lines.push(
      "",
      `## Soak: ${soakSeconds} s at ${soakRate} req/s of GET /v1/pets`,
      "",
      "| second | RSS MiB |",
      "| --- | --- |"
    )
    for (const sample of input.soakSamples) lines.push(`| ${sample.at} | ${sample.rss.toFixed(0)} |`)
  }
  return lines.join("\n") + "\n"
}

if (process.argv.includes("--growth")) {
  await import("./growth.ts")
  await import("./quotaGrowth.ts")
  await import("./redisQuotaGrowth.ts")
} else if (process.argv.includes("--redis-growth")) await import("./redisQuotaGrowth.ts") else if (process.argv.includes("--docs")) await import("./docs.ts")
else if (process.argv.includes("--pooler")) await import("./pooler.ts")
else if (process.argv.includes("--webhooks")) await import("./webhooks.ts")
else await main()
