/**
 * `pnpm bench --docs`: what anonymous readers of `/docs` cost the API's clients (issue 20, item 2).
 * `GET /v1/pets?limit=20` with a key at 8 connections, alone, then while one client reads `/docs` at 8
 * connections as a browser asks for it (`Accept-Encoding: gzip, deflate, br`), each for BENCH_DOCS_SECONDS
 * (default 10) after a warm-up: the list's p50 and p99, and the docs' requests per second and bytes per
 * answer. The docs readers run twice: with the anonymous limit raised out of the way (the cost of serving
 * `/docs` itself), and with the default limit (what one address can make the server do).
 *
 * Writes a row per scenario into bench/RESULTS.md between the docs markers, labelled with the commit, so the
 * table keeps the before (an older commit's run) and the after.
 */
import { serverEntry, createKey, createTestDatabase, type ServerProcess } from "@petstore/test-support"
import autocannon from "autocannon"
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import { startLogged } from "./processes.ts"

const seconds = Number(process.env.BENCH_DOCS_SECONDS ?? 10)
const CONNECTIONS = 8
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const START = "<!-- docs: written by pnpm bench --docs; rows of other commits are kept -->"
const END = "<!-- /docs -->"

const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()
const database = await createTestDatabase(
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  "petstore_bench_docs"
)
const started: Array<ServerProcess> = []

interface Row {
  readonly scenario: string
  readonly listP50: number
  readonly listP99: number
  readonly listRps: number
  readonly docsRps: number
  readonly docsBytes: number
  readonly docsStatuses: string
}

const listLoad = (origin: string, key: string) =>
  autocannon({
    url: `${origin}/v1/pets?limit=20`,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` }
  })

const docsLoad = (origin: string) =>
  autocannon({
    url: `${origin}/docs`,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { "accept-encoding": "gzip, deflate, br" }
  })

const statusesOf = (result: autocannon.Result) => {
  const counts = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {}
  return Object.entries(counts).map(([status, { count }]) => `${status}×${count}`).join(" ")
}

const measureScenario = async (label: string, env: Record<string, string>): Promise<ReadonlyArray<Row>> => {
  process.stdout.write(`starting the server (${label})… `)
  const server = await startLogged(`docs-${label}`, serverEntry(import.meta.url), {
    DATABASE_URL: database.url,
    ...env
  })
  started.push(server.server)
  console.log("ready")
  const { key } = await createKey(server.admin, "enterprise", { perMinute: 1_000_000_000, perDay: 2_000_000_000 })
  for (let i = 0; i < 40; i++) {
    await fetch(`${server.origin}/v1/pets`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: `Bench ${i}`, categoryId: 1 })
    })
  }
  // Warm-up: the list, and the docs page built (and compressed) once.
  await autocannon({
    url: `${server.origin}/v1/pets?limit=20`,
    connections: CONNECTIONS,
    duration: 3,
    headers: { authorization: `Bearer ${key}` }
  })
  await fetch(`${server.origin}/docs`, { headers: { "accept-encoding": "gzip, deflate, br" } }).then((answer) =>
    answer.arrayBuffer()
  )
  const alone = await listLoad(server.origin, key)
  const [list, docs] = await Promise.all([listLoad(server.origin, key), docsLoad(server.origin)])
  await server.server.stop()
  const row = (scenario: string, result: autocannon.Result, docsResult?: autocannon.Result): Row => ({
    scenario,
    listP50: result.latency.p50,
    listP99: result.latency.p99,
    listRps: result.requests.average,
    docsRps: docsResult?.requests.average ?? 0,
    docsBytes: docsResult === undefined || docsResult.requests.total === 0
      ? 0
      : docsResult.throughput.total / docsResult.requests.total,
    docsStatuses: docsResult === undefined ? "—" : statusesOf(docsResult)
  })
  return [row(`list alone (${label})`, alone), row(`list while /docs is read (${label})`, list, docs)]
}

try {
  const rows = [
    ...(await measureScenario("anonymous limit raised", { ANONYMOUS_RATE_LIMIT: "1000000000" })),
    ...(await measureScenario("default anonymous limit", {}))
  ]
  const format = (row: Row) =>
    `| ${commit} | ${row.scenario} | ${row.listP50} | ${row.listP99} | ${row.listRps.toFixed(0)} | ${
      row.docsRps.toFixed(0)
    } | ` +
    `${row.docsBytes === 0 ? "—" : (row.docsBytes / 1024).toFixed(0)} | ${row.docsStatuses} |`
  const previous = readFileSync(resultsFile, "utf8")
  const kept = previous.includes(START)
    ? previous.slice(previous.indexOf(START), previous.indexOf(END)).split("\n").filter((line) =>
      /^\| [0-9a-f]{7,} \|/.test(line) && !line.startsWith(`| ${commit} |`)
    )
    : []
  const section = [
    START,
    "## /docs under load: what anonymous readers cost the API",
    "",
    `\`GET /v1/pets?limit=20\` with a key at ${CONNECTIONS} connections for ${seconds} s, alone and while one client reads \`/docs\` at ` +
    `${CONNECTIONS} connections (\`Accept-Encoding: gzip, deflate, br\`); PostgreSQL; last run on ${cpus().length} × ` +
    `${cpus()[0]?.model ?? "?"}, load ${
      loadavg()[0]!.toFixed(1)
    }, Node ${process.version}. KiB is the docs' bytes per answer on the wire.`,
    "",
    "| commit | scenario | list p50 ms | list p99 ms | list req/s | /docs req/s | KiB per /docs | /docs statuses |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...kept,
    ...rows.map(format),
    END
  ].join("\n")
  const next = previous.includes(START)
    ? previous.slice(0, previous.indexOf(START)) + section + previous.slice(previous.indexOf(END) + END.length)
    : `${previous.trimEnd()}\n\n${section}\n`
  writeFileSync(resultsFile, next)
  for (const row of rows) console.log(format(row))
} finally {
  for (const server of started) await server.stop().catch(() => undefined)
  await database.drop()
}
