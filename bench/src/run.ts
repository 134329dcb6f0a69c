/**
 * `pnpm bench`: the server against the floor (./floor.ts) on PostgreSQL, in one
 * run, alternating, after a warm-up. Reports requests per server CPU-second
 * (the stable figure on a noisy machine), req/s and latency at 64 connections,
 * then the in-memory quota store and WORKERS=2 against WORKERS=1. With --soak,
 * also a steady run that samples resident memory every 10 s.
 *
 * Environment: DATABASE_URL (a database to create the bench database from;
 * default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ROUNDS (3),
 * BENCH_SECONDS (8), BENCH_SOAK_SECONDS (300), BENCH_SOAK_RATE (1000 req/s).
 */
import {
  createKey,
  createTestDatabase,
  freePort,
  serverEntry,
  type ServerProcess,
  spawnServer,
  startServerProcess,
  waitUntilReady
} from "@petstore/test-support"
import autocannon from "autocannon"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { cpuSeconds, rssMiB } from "./processes.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const soak = process.argv.includes("--soak")
const soakSeconds = Number(process.env.BENCH_SOAK_SECONDS ?? 300)
const soakRate = Number(process.env.BENCH_SOAK_RATE ?? 1000)
const CONNECTIONS = 64
const serverMain = serverEntry(import.meta.url)
const floorMain = fileURLToPath(new URL("./floor.ts", import.meta.url))
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))

type Endpoint = "list" | "create" | "get"
const endpoints: ReadonlyArray<Endpoint> = ["list", "create", "get"]

interface Measure {
  readonly requests: number
  readonly cpu: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

const requestsFor = (endpoint: Endpoint, key: string) => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  switch (endpoint) {
    case "list":
      return [{ method: "GET" as const, path: "/v1/pets?limit=20", headers }]
    case "create":
      return [{ method: "POST" as const, path: "/v1/pets", headers, body: JSON.stringify({ name: "Bench", categoryId: 1 }) }]
    case "get":
      return [{
        method: "GET" as const,
        headers,
        setupRequest: (request: { path: string }) => ({ ...request, path: `/v1/pets/${1 + Math.floor(Math.random() * 10_000)}` })
      }]
  }
}

/** A process serving HTTP at `origin`: the server, or the floor. */
interface Target {
  readonly server: ServerProcess
  readonly origin: string
}

const measure = async (target: Target, endpoint: Endpoint, key: string, duration: number): Promise<Measure> => {
  const cpuBefore = cpuSeconds(target.server.child.pid!)
  const result = await autocannon({
    url: target.origin,
    connections: CONNECTIONS,
    duration,
    requests: requestsFor(endpoint, key) as Array<autocannon.Request>
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
  /** The server, ready when its /readyz answers, with an admin listener of its own. */
  const startServer = async (label: string, env: Record<string, string>) => {
    starting(label)
    const target = await startServerProcess({ DATABASE_URL: databaseUrl, ...env }, 60_000, serverMain)
    started.push(target.server)
    console.log("ready")
    return target
  }
  /** The floor has no /readyz: it is ready when it answers at all. */
  const startFloor = async (): Promise<Target> => {
    starting("floor (node:http + postgres.js)")
    const port = await freePort()
    const server = spawnServer({ PORT: String(port), DATABASE_URL: databaseUrl }, floorMain)
    started.push(server)
    const origin = `http://127.0.0.1:${port}`
    await waitUntilReady(server, `${origin}/v1/pets`, 60_000, (status) => status < 500)
    console.log("ready")
    return { server, origin }
  }
  try {
    const server = await startServer("server (PostgreSQL quota store)", {})
    const db = postgres(databaseUrl, { max: 1, onnotice: () => {} })
    await db`INSERT INTO pets (name, category_id, status)
      SELECT 'Pet ' || g, 1 + g % 10, (ARRAY['available', 'pending', 'sold'])[1 + g % 3] FROM generate_series(1, 10000) AS g`
    const { key } = await createKey(server.admin, "enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
    const [{ version: pgVersion }] = await db`SELECT current_setting('server_version') AS version` as unknown as [{ version: string }]

    const floor = await startFloor()
    const memory = await startServer("server (in-memory quota store)", { QUOTA_STORE: "memory" })

    console.log(`warming up (${endpoints.length * 3} × 3 s)`)
    for (const endpoint of endpoints) for (const target of [server, floor, memory]) await measure(target, endpoint, key, 3)

    const results = new Map<string, Array<Measure>>()
    const record = (label: string, m: Measure) => results.set(label, [...(results.get(label) ?? []), m])
    for (let round = 1; round <= rounds; round++) {
      for (const endpoint of endpoints) {
        for (const [label, target] of [["server", server], ["floor", floor]] as const) {
          const m = await measure(target, endpoint, key, seconds)
          record(`${label} ${endpoint}`, m)
          console.log(`round ${round} ${label.padEnd(6)} ${endpoint.padEnd(6)} ${m.rps.toFixed(0).padStart(6)} req/s  ${perCpuSecond(m).toFixed(0).padStart(6)} req/CPU-s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors}`)
        }
      }
    }
    for (let round = 1; round <= Math.max(1, rounds - 1); round++) {
      for (const endpoint of endpoints) {
        const m = await measure(memory, endpoint, key, seconds)
        record(`memory ${endpoint}`, m)
        console.log(`round ${round} memory ${endpoint.padEnd(6)} ${m.rps.toFixed(0).padStart(6)} req/s  ${perCpuSecond(m).toFixed(0).padStart(6)} req/CPU-s  p99 ${m.p99} ms`)
      }
    }
    await memory.server.stop()
    const workers = await startServer("server WORKERS=2", { WORKERS: "2" })
    for (let round = 1; round <= Math.max(1, rounds - 1); round++) {
      for (const [label, target] of [["workers1", server], ["workers2", workers]] as const) {
        const m = await measure(target, "list", key, seconds)
        record(`${label} list`, m)
        console.log(`round ${round} ${label} list ${m.rps.toFixed(0).padStart(6)} req/s  ${perCpuSecond(m).toFixed(0).padStart(6)} req/CPU-s  p99 ${m.p99} ms`)
      }
    }
    await workers.server.stop()

    let soakSamples: Array<{ at: number; rss: number; p99: number }> = []
    if (soak) {
      console.log(`soak: ${soakSeconds} s at ${soakRate} req/s of list`)
      soakSamples = await soakRun(server, key)
    }

    const effectVersion = JSON.parse(readFileSync(fileURLToPath(new URL("../../node_modules/.pnpm/node_modules/effect/package.json", import.meta.url)), "utf8")).version
    const autocannonVersion = JSON.parse(readFileSync(fileURLToPath(new URL("../node_modules/autocannon/package.json", import.meta.url)), "utf8")).version
    writeFileSync(resultsFile, report({ results, pgVersion, effectVersion, autocannonVersion, soakSamples }) + keptAnalysis())
    console.log(`wrote ${resultsFile}`)
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
  const sampler = setInterval(() => samples.push({ at: Math.round((Date.now() - begin) / 1000), rss: rssMiB(server.server.child.pid!), p99: 0 }), 10_000)
  await autocannon({
    url: server.origin,
    connections: CONNECTIONS,
    duration: soakSeconds,
    overallRate: soakRate,
    requests: requestsFor("list", key) as Array<autocannon.Request>
  })
  clearInterval(sampler)
  return samples
}

const report = (input: {
  readonly results: Map<string, Array<Measure>>
  readonly pgVersion: string
  readonly effectVersion: string
  readonly autocannonVersion: string
  readonly soakSamples: ReadonlyArray<{ at: number; rss: number }>
}) => {
  const get = (label: string) => combine(input.results.get(label) ?? [])
  const row = (label: string, m: Measure, floor?: Measure) =>
    `| ${label} | ${perCpuSecond(m).toFixed(0)} | ${floor ? (perCpuSecond(m) / perCpuSecond(floor)).toFixed(2) + "×" : "1.00×"} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${m.errors} |`
  const lines = [
    "# Benchmark results",
    "",
    `Measured by \`pnpm bench\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${cpus()[0]?.model.trim()}), ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.versions.node}, effect ${input.effectVersion}, ` +
      `PostgreSQL ${input.pgVersion} on the same machine, autocannon ${input.autocannonVersion}. ` +
      `${CONNECTIONS} connections, ${rounds} rounds of ${seconds} s per target and endpoint, alternating, after a 3 s warm-up. ` +
      "The database holds 10,000 pets; the key's quota is too high to bind, but every request still spends it.",
    "",
    "Requests per CPU-second divides the requests served by the CPU time (user + system) the server process used",
    "meanwhile, read from /proc: the load generator and PostgreSQL share the machine, so req/s moves with them and",
    "this figure does not. req/s, p50 and p99 are medians over the rounds.",
    "",
    "## Server (PostgreSQL quota store) against the floor",
    "",
    "| target | req per CPU-s | vs floor | req/s | p50 ms | p99 ms | non-2xx |",
    "| --- | --- | --- | --- | --- | --- | --- |"
  ]
  for (const endpoint of endpoints) {
    const floor = get(`floor ${endpoint}`)
    lines.push(row(`floor ${endpoint}`, floor), row(`server ${endpoint}`, get(`server ${endpoint}`), floor))
  }
  const ratio = (endpoint: Endpoint) => perCpuSecond(get(`server ${endpoint}`)) / perCpuSecond(get(`floor ${endpoint}`))
  const verdict = (met: boolean) => met ? "met" : "missed"
  lines.push(
    "",
    "### Against the targets",
    "",
    ...(["list", "create"] as const).map((endpoint) =>
      `- Requests per server CPU-second, ${endpoint === "list" ? "GET /v1/pets?limit=20" : "POST /v1/pets"}: ` +
      `${ratio(endpoint).toFixed(2)}× the floor against a target of at least 1.00×: ${verdict(ratio(endpoint) >= 1)}` +
      (ratio(endpoint) >= 1 ? "." : ` by ${((1 - ratio(endpoint)) * 100).toFixed(0)}%.`)
    ),
    ...endpoints.map((endpoint) => {
      const p99 = get(`server ${endpoint}`).p99
      return `- p99 of the server, ${endpoint}, at ${CONNECTIONS} connections: ${p99} ms against a target of at most 25 ms: ${verdict(p99 <= 25)}.`
    })
  )
  lines.push("", "## In-memory quota store", "", "| target | req per CPU-s | vs floor | req/s | p50 ms | p99 ms | non-2xx |", "| --- | --- | --- | --- | --- | --- | --- |")
  for (const endpoint of endpoints) lines.push(row(`memory ${endpoint}`, get(`memory ${endpoint}`), get(`floor ${endpoint}`)))
  lines.push("", "## WORKERS=2 against WORKERS=1 (GET /v1/pets?limit=20)", "", "CPU of WORKERS=2 counts the primary and both workers.", "", "| target | req per CPU-s | vs WORKERS=1 | req/s | p50 ms | p99 ms | non-2xx |", "| --- | --- | --- | --- | --- | --- | --- |")
  lines.push(row("WORKERS=1", get("workers1 list")), row("WORKERS=2", get("workers2 list"), get("workers1 list")))
  if (input.soakSamples.length > 0) {
    lines.push("", `## Soak: ${soakSeconds} s at ${soakRate} req/s of GET /v1/pets`, "", "| second | RSS MiB |", "| --- | --- |")
    for (const sample of input.soakSamples) lines.push(`| ${sample.at} | ${sample.rss.toFixed(0)} |`)
  }
  return lines.join("\n") + "\n"
}

await main()
