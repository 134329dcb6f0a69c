/**
 * Server CPU per request, A/B/… (issue 35): compiled servers (BENCH_TARGETS, comma-separated `main.js` paths;
 * default this tree's build twice, an A/A check), each on a database of its own with 10,000 pets and a key whose
 * quota never binds, all started with the same Node flags (the shipped ones unless BENCH_SERVER_NODE_OPTIONS
 * says otherwise), request log at Info to a file, PostgreSQL quota store. After a warm-up, rounds go through the
 * targets in turn, the order reversed every other round (A B, B A, …): each sends a fixed number of requests
 * (BENCH_REQUESTS, 3,000) of one endpoint (BENCH_ENDPOINT: list, get or create) over BENCH_CONNECTIONS (8)
 * connections, and reads the server's user + system CPU from /proc before and after. CPU time rather than
 * wall-clock, and the targets interleaved, because the machine is shared: its load moves every target's figure
 * alike, so the ratios are what to read. Prints µs of CPU per request per round, and each target's median
 * ratio to the first.
 */
import { serverEntry, createKey, createTestDatabase } from "@petstore/test-support"
import autocannon from "autocannon"
import { readFileSync } from "node:fs"
import { loadavg } from "node:os"
import postgres from "postgres"
import { insertListPets } from "./listPets.ts"
import { cpuSeconds, type LoggedProcess, startLogged } from "./processes.ts"

const entries = (process.env.BENCH_TARGETS ?? `${serverEntry(import.meta.url)},${serverEntry(import.meta.url)}`)
  .split(",")
  .filter(Boolean)
const requests = Number(process.env.BENCH_REQUESTS ?? 3000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 8)
const rounds = Number(process.env.BENCH_ROUNDS ?? 8)
const endpoint = process.env.BENCH_ENDPOINT ?? "list"
const shippedNodeOptions = (() => {
  const { scripts } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
  return (/NODE_OPTIONS=\\?"([^"$]*)/.exec(scripts.start)?.[1] ?? "").trim()
})()
const nodeOptions = (process.env.BENCH_SERVER_NODE_OPTIONS ?? shippedNodeOptions).split(" ").filter(Boolean)
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const requestOf = (key: string) => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  switch (endpoint) {
    case "get":
      return { method: "GET" as const, path: "/v1/pets/4242", headers }
    case "create":
      return {
        method: "POST" as const,
        path: "/v1/pets",
        headers,
        body: JSON.stringify({ name: "Rex", status: "available" })
      }
    default:
      return { method: "GET" as const, path: "/v1/pets?limit=20", headers }
  }
}

interface Target {
  readonly label: string
  readonly process: LoggedProcess
  readonly key: string
  readonly drop: () => Promise<void>
}

const start = async (label: string, entry: string): Promise<Target> => {
  const database = await createTestDatabase(adminUrl, "petstore_cpu")
  const started = await startLogged(`cpu-${label}`, entry, { DATABASE_URL: database.url }, { nodeOptions })
  const db = postgres(database.url, { max: 1, onnotice: () => {} })
  await insertListPets(db)
  await db`VACUUM ANALYZE pets`
  await db.end()
  const { key } = await createKey(started.admin, "enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
  return {
    label,
    process: started,
    key,
    drop: async () => {
      await started.server.stop()
      await database.drop()
    }
  }
}

/** µs of server CPU a request over `amount` requests. */
const drive = async (target: Target, amount: number) => {
  const pid = target.process.server.child.pid!
  const before = cpuSeconds(pid)
  const result = await autocannon({
    url: target.process.origin,
    connections,
    amount,
    requests: [requestOf(target.key)]
  })
  const cpu = cpuSeconds(pid) - before
  const failed = result.non2xx + result.errors
  if (failed > 0) throw new Error(`${target.label}: ${failed} of ${amount} requests failed`)
  return (cpu / amount) * 1e6
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const main = async () => {
  const targets: Array<Target> = []
  try {
    for (const [index, entry] of entries.entries()) {
      targets.push(await start(String.fromCharCode(65 + index), entry))
      console.log(`${targets.at(-1)!.label} ${entry}`)
    }
    console.log(
      `${endpoint}, ${requests} requests a round, ${connections} connections, Node flags: ${nodeOptions.join(" ")}`
    )
    for (const target of [...targets, ...targets]) await drive(target, requests / 2)
    const perRequest = targets.map(() => [] as Array<number>)
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse()
      for (const target of order) perRequest[targets.indexOf(target)]!.push(await drive(target, requests))
      console.log(
        `round ${round + 1}: ${
          targets.map((t, i) => `${t.label} ${perRequest[i]!.at(-1)!.toFixed(0)}`).join(", ")
        } µs` +
          ` CPU a request; load ${loadavg()[0]!.toFixed(1)}`
      )
    }
    for (const [index, target] of targets.entries()) {
      const ratios = perRequest[index]!.map((value, round) => value / perRequest[0]![round]!)
      console.log(
        `${target.label}: median ${median(perRequest[index]!).toFixed(0)} µs CPU a request; ÷ A per round ` +
          `${ratios.map((r) => r.toFixed(2)).join(" ")}, median ${median(ratios).toFixed(3)}`
      )
    }
  } finally {
    for (const target of targets) await target.drop()
  }
}

await main()
