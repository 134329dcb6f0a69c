/**
 * `pnpm bench --pooler`: named prepared statements against unnamed ones, and
 * the same load direct and through a transaction-mode PgBouncer (Debian's
 * `pgbouncer`, started on a free port): list and create, per server
 * CPU-second, and PostgreSQL's CPU per request (the bench database's backends,
 * from /proc). Writes its section of bench/RESULTS.md. What decides
 * DATABASE_PREPARED_STATEMENTS's default (docs/postgresql.md, "Poolers").
 */
import autocannon from "autocannon"
import postgres from "postgres"
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { serverEntry, createKey, createTestDatabase, startPgBouncer, startServerProcess } from "@petstore/test-support"
import { cpuSeconds } from "./processes.ts"

const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const rounds = Number(process.env.BENCH_ROUNDS ?? 2)
const CONNECTIONS = 64
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const MARK_START = "<!-- pooler: pnpm bench --pooler -->"
const MARK_END = "<!-- /pooler -->"

const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const database = await createTestDatabase(adminUrl, "petstore_bench_pooler")
const target = new URL(database.url)
const bouncer = await startPgBouncer({
  host: target.hostname,
  port: Number(target.port || 5432),
  users: [decodeURIComponent(target.username)],
  defaultPoolSize: 20
})
const monitor = postgres(database.url, { max: 1, onnotice: () => {} })
const backendCpu = async () => {
  const pids =
    await monitor`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
  return pids.reduce((sum, { pid }) => {
    try {
      return sum + cpuSeconds(pid as number)
    } catch {
      return sum
    }
  }, 0)
}

const configurations = [
  { name: "direct, prepared", env: { DATABASE_URL: database.url, DATABASE_PREPARED_STATEMENTS: "true" } },
  { name: "direct, unnamed", env: { DATABASE_URL: database.url, DATABASE_PREPARED_STATEMENTS: "false" } },
  {
    name: "PgBouncer (transaction), unnamed",
    env: { DATABASE_URL: bouncer.through(database.url), DATABASE_DIRECT_URL: database.url }
  }
] as const

const rows: Array<string> = []
try {
  for (const configuration of configurations) {
    const started = await startServerProcess(
      { ...configuration.env, LOG_LEVEL: "Warn" },
      120_000,
      serverEntry(import.meta.url)
    )
    try {
      const { key } = await createKey(started.admin, "enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      for (const endpoint of ["list", "create"] as const) {
        const request = endpoint === "list"
          ? { method: "GET" as const, path: "/v1/pets?limit=20", headers }
          : {
            method: "POST" as const,
            path: "/v1/pets",
            headers,
            body: JSON.stringify({ name: "Bench", categoryId: 1 })
          }
        await autocannon({ url: started.origin, connections: CONNECTIONS, duration: 2, requests: [request] })
        let [requests, serverCpu, postgresCpu, errors, rps] = [0, 0, 0, 0, 0]
        for (let round = 0; round < rounds; round++) {
          const [serverBefore, postgresBefore] = [cpuSeconds(started.server.child.pid!), await backendCpu()]
          const result = await autocannon({
            url: started.origin,
            connections: CONNECTIONS,
            duration: seconds,
            requests: [request]
          })
          serverCpu += cpuSeconds(started.server.child.pid!) - serverBefore
          postgresCpu += (await backendCpu()) - postgresBefore
          requests += result.requests.total
          errors += result.non2xx + result.errors + result.timeouts
          rps += result.requests.average / rounds
        }
        const row = `| ${configuration.name} | ${endpoint} | ${(requests / serverCpu).toFixed(0)} | ${
          (postgresCpu / requests * 1e6).toFixed(0)
        } | ${rps.toFixed(0)} | ${errors} |`
        console.info(row)
        rows.push(row)
      }
    } finally {
      await started.server.stop()
    }
  }
} finally {
  await monitor.end()
  await bouncer.stop()
  await database.drop()
}

const version = await (async () => {
  const sql = postgres(adminUrl, { max: 1 })
  try {
    const rows = await sql<Array<{ version: string }>>`SELECT current_setting('server_version') AS version`
    return rows[0]!.version
  } finally {
    await sql.end()
  }
})()
const section = [
  MARK_START,
  "## Prepared and unnamed statements, direct and through PgBouncer",
  "",
  `Measured by \`pnpm bench --pooler\` on ${
    new Date().toISOString().slice(0, 10)
  }: Node ${process.version}, PostgreSQL ${version}, ` +
  `PgBouncer 1.18 (Debian), ${CONNECTIONS} connections, ${rounds} rounds of ${seconds} s per row after a 2 s warm-up; ` +
  "PostgreSQL CPU is the bench database's backends', from /proc (through PgBouncer: its 20 server connections; PgBouncer's own CPU is not counted).",
  "",
  "| configuration | endpoint | req per server CPU-s | PostgreSQL CPU µs per request | req/s | non-2xx |",
  "| --- | --- | --- | --- | --- | --- |",
  ...rows,
  MARK_END
].join("\n")
const current = readFileSync(resultsFile, "utf8")
const start = current.indexOf(MARK_START)
const end = current.indexOf(MARK_END)
writeFileSync(
  resultsFile,
  start === -1
    ? `${current.trimEnd()}\n\n${section}\n`
    : `${current.slice(0, start)}${section}${current.slice(end + MARK_END.length)}`
)
