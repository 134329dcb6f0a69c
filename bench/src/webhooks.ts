/**
 * `pnpm bench --webhooks`: what delivering webhooks costs and how fast it is,
 * on PostgreSQL, with a real receiver on loopback (this process) answering 204.
 *
 * - Lag: pets created at a steady rate (BENCH_WEBHOOK_RATE per second, default
 *   50, for BENCH_SECONDS), each a `pet.created` event delivered to one
 *   endpoint; lag is from the event's timestamp (its transaction) to the
 *   receiver's answer. p50 and p99.
 * - Deliveries per server CPU-second: BENCH_WEBHOOK_BACKLOG events (default
 *   5,000) queued by a server that does not deliver (WEBHOOK_DELIVERY=false),
 *   then a delivering server started alone, timed by its CPU until the queue is empty.
 * - The API with deliveries on against off: POST /v1/pets at 64 connections
 *   (every create an event delivered), alternating, BENCH_ROUNDS rounds each.
 * - The queue table afterwards: live and dead tuples, autovacuum runs, size.
 *
 * Writes its tables into bench/RESULTS.md between the webhook markers.
 */
import { serverEntry, createKey, createTestDatabase } from "@petstore/test-support"
import autocannon from "autocannon"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { cpuSeconds, startLogged } from "./processes.ts"

const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const rate = Number(process.env.BENCH_WEBHOOK_RATE ?? 50)
const backlog = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 5_000)
const serverMain = serverEntry(import.meta.url)
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

const main = async () => {
  const database = await createTestDatabase(adminUrl, "petstore_bench_webhooks")
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  const lags: Array<number> = []
  let delivered = 0
  const receiver = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      delivered++
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { timestamp: string }
      lags.push(Date.now() - Date.parse(event.timestamp))
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  const env = (delivery: boolean) => ({
    DATABASE_URL: database.url,
    LOG_LEVEL: "Warn",
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true",
    WEBHOOK_DELIVERY: String(delivery)
  })
  const results: Array<string> = []
  try {
    let server = await startLogged("webhooks-on", serverMain, env(true))
    const { key } = await createKey(
      server.admin,
      "enterprise",
      { perMinute: 10_000_000, perDay: 1_000_000_000 },
      undefined,
      "staff"
    )
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const registered = await fetch(`${server.origin}/v1/webhooks/endpoints`, {
      method: "POST",
      headers,
      body: JSON.stringify({ url: hookUrl, eventTypes: ["pet.created"] })
    })
    if (registered.status !== 201) {
      throw new Error(`registering the endpoint: ${registered.status} ${await registered.text()}`)
    }
    const createPet = (i: number) =>
      fetch(`${server.origin}/v1/pets`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: `Bench ${i}`, categoryId: 1 })
      })
        .then((answer) => answer.arrayBuffer())

    // Lag at a steady rate.
    const total = rate * seconds
    const started = Date.now()
    const creates: Array<Promise<unknown>> = []
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate
      const wait = due - Date.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      creates.push(createPet(i))
    }
    await Promise.all(creates)
    const drainBy = Date.now() + 60_000
    while (delivered < total && Date.now() < drainBy) await new Promise((resolve) => setTimeout(resolve, 50))
    const sorted = [...lags].sort((a, b) => a - b)
    results.push(
      `| steady ${rate} changes/s for ${seconds} s | ${delivered} of ${total} | ${percentile(sorted, 0.5)} | ${
        percentile(sorted, 0.99)
      } | ${sorted.at(-1)} |`
    )
    await server.server.stop()

    // Deliveries per server CPU-second: a backlog queued by a server that does not deliver, then one that does.
    server = await startLogged("webhooks-off", serverMain, env(false))
    const queueBacklog = async () => {
      for (let i = 0; i < backlog; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => createPet(i + j)))
    }
    await queueBacklog()
    await server.server.stop()
    const before = delivered
    server = await startLogged("webhooks-drain", serverMain, env(true))
    const cpuAtStart = cpuSeconds(server.server.child.pid!)
    const drainStarted = Date.now()
    while (delivered - before < backlog && Date.now() < drainStarted + 300_000) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const drainSeconds = (Date.now() - drainStarted) / 1000
    const drainCpu = cpuSeconds(server.server.child.pid!) - cpuAtStart
    const throughput = `| ${delivered - before} | ${drainSeconds.toFixed(1)} | ${drainCpu.toFixed(2)} | ${
      ((delivered - before) / drainCpu).toFixed(0)
    } | ${((delivered - before) / drainSeconds).toFixed(0)} |`
    await server.server.stop()

    // The API with deliveries on and off, alternating.
    const api: Array<string> = []
    for (let round = 1; round <= rounds; round++) {
      for (const delivery of [true, false]) {
        server = await startLogged(`webhooks-api-${delivery}`, serverMain, env(delivery))
        const pid = server.server.child.pid!
        const cpuBefore = cpuSeconds(pid)
        const result = await autocannon({
          url: `${server.origin}/v1/pets`,
          method: "POST",
          headers,
          body: JSON.stringify({ name: "Load", categoryId: 1 }),
          connections: 64,
          duration: seconds
        })
        const cpu = cpuSeconds(pid) - cpuBefore
        api.push(
          `| ${round} | ${delivery ? "on" : "off"} | ${
            result.requests.average.toFixed(0)
          } | ${result.latency.p50} | ${result.latency.p99} | ${
            (result.requests.total / cpu).toFixed(0)
          } | ${result.non2xx} |`
        )
        await server.server.stop()
      }
    }
    // Let every queued delivery finish before reading the queue table.
    server = await startLogged("webhooks-final-drain", serverMain, env(true))
    const finalBy = Date.now() + 300_000
    for (;;) {
      const [row] = await sql<Array<{ n: number }>>`SELECT count(*)::integer AS n FROM webhook_messages`
      if (row!.n === 0 || Date.now() > finalBy) break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    await server.server.stop()
    const [stats] = await sql<Array<Record<string, unknown>>>`
      SELECT n_live_tup, n_dead_tup, n_tup_ins, n_tup_upd, n_tup_del, autovacuum_count,
        pg_size_pretty(pg_total_relation_size('webhook_messages')) AS size
      FROM pg_stat_user_tables WHERE relname = 'webhook_messages'`
    const [version] = await sql<Array<{ server_version: string }>>`SHOW server_version`
    const table = `| ${stats!.n_tup_ins} | ${stats!.n_tup_upd} | ${stats!.n_tup_del} | ${stats!.n_live_tup} | ${
      stats!.n_dead_tup
    } | ${stats!.autovacuum_count} | ${stats!.size} |`
    const report = [
      "<!-- webhooks -->",
      "## Webhooks (`pnpm bench --webhooks`)",
      "",
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, load ${
        loadavg()[0]!.toFixed(1)
      } at the end; Node ${process.version}, PostgreSQL ${version!.server_version}. ` +
      "One server process, PostgreSQL on loopback, the receiver in the bench process answering 204.",
      "",
      "Delivery lag, from an event's transaction to the receiver's answer:",
      "",
      "| load | delivered | p50 ms | p99 ms | max ms |",
      "| --- | --- | --- | --- | --- |",
      ...results,
      "",
      "Draining a backlog (one delivering process, the queue filled by another that does not deliver):",
      "",
      "| deliveries | seconds | server CPU-s | deliveries per CPU-s | deliveries/s |",
      "| --- | --- | --- | --- | --- |",
      throughput,
      "",
      "The API with deliveries on and off (`POST /v1/pets`, 64 connections; every create is an event delivered to one endpoint; " +
      "CPU-s counts the delivering, too):",
      "",
      "| round | deliveries | req/s | p50 ms | p99 ms | req per CPU-s | non-2xx |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      ...api,
      "",
      "The queue table (`webhook_messages`) after the runs, every delivery finished:",
      "",
      "| inserted | updated | deleted | live | dead | autovacuum runs | size |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      table,
      "<!-- /webhooks -->"
    ].join("\n")
    const current = readFileSync(resultsFile, "utf8")
    const marked = /<!-- webhooks -->[\s\S]*<!-- \/webhooks -->/
    writeFileSync(
      resultsFile,
      marked.test(current) ? current.replace(marked, report) : `${current.trimEnd()}\n\n${report}\n`
    )
    console.log(report)
  } finally {
    await sql.end()
    receiver.close()
    await database.drop()
  }
}

await main()
