/**
 * `pnpm bench --growth`: how each operation's cost grows with the work. The
 * same server as the main bench (request logging, metrics, PostgreSQL quota
 * store), measured at two store sizes, 10,000 then 1,000,000 pets, with few
 * sold (one in a thousand), for: the first page of the list, the first page of
 * a selective filter (`status=sold`), a deep page of a keyset walk (page 1,000
 * where the store has one, else its last page), a pet by id, a create, and the
 * first page with 10,000 live keys used at random (every request a different
 * key: the key cache churns and the quota table holds 10,000 subjects).
 *
 * Each operation reports the server's CPU per request and PostgreSQL's (the
 * backends of the bench database, read from /proc), latency at 64 connections,
 * and the plan of its statement: buffers touched and rows the scan read and
 * threw away, from EXPLAIN (ANALYZE, BUFFERS) of the statement the server sends
 * for one request. A flat operation keeps these the same from 10k to 1M; an
 * index lookup may add a level (a few buffers), no more.
 *
 * Writes its table into bench/RESULTS.md between the growth markers.
 */
import { createKey, createTestDatabase, serverEntry } from "@petstore/test-support"
import autocannon from "autocannon"
import { createHash } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { cpuSeconds, startLogged } from "./processes.ts"

const seconds = Number(process.env.BENCH_GROWTH_SECONDS ?? 6)
const sizes = (process.env.BENCH_GROWTH_SIZES ?? "10000,1000000").split(",").map(Number)
const KEYS = Number(process.env.BENCH_GROWTH_KEYS ?? 10_000)
const CONNECTIONS = 64
const PAGE = 20
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const cursor = (afterId: number) => Buffer.from(`after:${afterId}`).toString("base64url")
const keySecret = (n: number) => `psk_growth_${n.toString().padStart(6, "0")}`

interface Row {
  readonly size: number
  readonly operation: string
  readonly serverMicros: number
  readonly postgresMicros: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly buffers: string
  readonly removed: string
}

/** The statements the server sends for one request of each kind (src/pets/Pets.ts, with a batch of one). */
const listStatement = (status: string | null, after: number) => ({
  text: `SELECT q.ordinal::integer AS ordinal, p.id, p.name, p.category_id, p.status
    FROM unnest($1::integer[], $2::text[], $3::bigint[]) WITH ORDINALITY AS q(take, status, after, ordinal)
    CROSS JOIN LATERAL (
      (SELECT id, name, category_id, status FROM pets
       WHERE q.status IS NULL AND id > q.after ORDER BY id LIMIT q.take)
      UNION ALL
      (SELECT id, name, category_id, status FROM pets
       WHERE q.status IS NOT NULL AND (pets.status, pets.id) > (q.status, q.after) AND pets.status <= q.status
       ORDER BY pets.status, pets.id LIMIT q.take)
    ) AS p
    ORDER BY q.ordinal, p.id`,
  values: [`{${PAGE + 1}}`, status === null ? "{NULL}" : `{"${status}"}`, `{${after}}`]
})
const getStatement = (id: number) => ({
  text: "SELECT id, name, category_id, status FROM pets WHERE id = ANY($1::bigint[])",
  values: [`{${id}}`]
})
const keyStatement = (n: number) => ({
  text: "SELECT id, name, plan, per_minute, per_day, created_at FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL",
  values: [createHash("sha256").update(keySecret(n)).digest("hex")]
})

const main = async () => {
  const database = await createTestDatabase(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", "petstore_growth")
  const db = postgres(database.url, { max: 1, onnotice: () => {} })
  const stops: Array<() => Promise<void>> = []
  try {
    const server = await startLogged("growth", serverEntry(import.meta.url), { DATABASE_URL: database.url })
    stops.push(server.server.stop)
    const { key } = await createKey(server.admin, "enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
    // 10,000 live keys, inserted as the admin API would (an enterprise key's own limits), with secrets we know.
    await db`INSERT INTO api_keys (id, secret_hash, name, plan, per_minute, per_day)
      SELECT 'key_growth' || g, encode(sha256(convert_to('psk_growth_' || lpad(g::text, 6, '0'), 'UTF8')), 'hex'), 'growth', 'enterprise', 2000000000, 2000000000
      FROM generate_series(1, ${KEYS}::integer) AS g`
    const [{ version: pgVersion }] = await db`SELECT current_setting('server_version') AS version` as unknown as [{ version: string }]
    const backendCpu = async () => {
      const pids = await db`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'petstore'`
      return pids.reduce((sum, { pid }) => {
        try {
          return sum + cpuSeconds(pid as number)
        } catch {
          return sum
        }
      }, 0)
    }
    const explain = async (statement: { text: string; values: Array<string> }) => {
      const [row] = await db.unsafe(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`, statement.values)
      const plan = (row as unknown as { "QUERY PLAN": Array<{ Plan: PlanNode }> })["QUERY PLAN"][0]!.Plan
      const sum = (node: PlanNode, pick: (n: PlanNode) => number): number =>
        pick(node) + (node.Plans ?? []).reduce((s, child) => s + sum(child, pick), 0)
      // Buffers are cumulative up the tree; the top node's are the statement's.
      const buffers = (plan["Shared Hit Blocks"] ?? 0) + (plan["Shared Read Blocks"] ?? 0)
      const removed = sum(plan, (n) => (n["Rows Removed by Filter"] ?? 0) * (n["Actual Loops"] ?? 1))
      return { buffers: String(buffers), removed: String(removed) }
    }
    interface PlanNode {
      readonly Plans?: Array<PlanNode>
      readonly "Shared Hit Blocks"?: number
      readonly "Shared Read Blocks"?: number
      readonly "Rows Removed by Filter"?: number
      readonly "Actual Loops"?: number
    }
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const rows: Array<Row> = []
    let stored = 0
    const loadAtStart = loadavg().map((l) => l.toFixed(1)).join(" ")

    for (const size of sizes) {
      process.stdout.write(`filling the store to ${size.toLocaleString("en")} pets… `)
      await db`INSERT INTO pets (name, category_id, status)
        SELECT 'Pet ' || g, 1 + g % 10, CASE WHEN g % 1000 = 0 THEN 'sold' WHEN g % 2 = 0 THEN 'pending' ELSE 'available' END
        FROM generate_series(${stored + 1}::integer, ${size}::integer) AS g`
      stored = size
      await db`VACUUM ANALYZE pets`
      const [bounds] = await db`SELECT min(id)::integer AS min, max(id)::integer AS max FROM pets`
      const [min, max] = [Number(bounds!.min), Number(bounds!.max)]
      console.log("done")
      const pages = Math.floor(size / PAGE)
      const deepPage = Math.min(1000, pages - 1)
      const deepAfter = min - 1 + (deepPage - 1) * PAGE
      const soldAfter = Math.floor(max * 0.9)
      const operations: ReadonlyArray<{
        readonly name: string
        readonly request: autocannon.Request
        readonly statement: { text: string; values: Array<string> }
      }> = [
        { name: "list, page 1", request: { method: "GET", path: `/v1/pets?limit=${PAGE}`, headers: auth }, statement: listStatement(null, 0) },
        {
          name: `list, page ${deepPage.toLocaleString("en")}`,
          request: { method: "GET", path: `/v1/pets?limit=${PAGE}&cursor=${cursor(deepAfter)}`, headers: auth },
          statement: listStatement(null, deepAfter)
        },
        { name: "list status=sold, page 1", request: { method: "GET", path: `/v1/pets?limit=${PAGE}&status=sold`, headers: auth }, statement: listStatement("sold", 0) },
        {
          name: "list status=sold, after 90% of ids",
          request: { method: "GET", path: `/v1/pets?limit=${PAGE}&status=sold&cursor=${cursor(soldAfter)}`, headers: auth },
          statement: listStatement("sold", soldAfter)
        },
        {
          name: "get by id (random)",
          request: {
            method: "GET",
            headers: auth,
            setupRequest: (request) => ({ ...request, path: `/v1/pets/${min + Math.floor(Math.random() * (max - min + 1))}` })
          },
          statement: getStatement(Math.floor((min + max) / 2))
        },
        {
          name: "create",
          request: { method: "POST", path: "/v1/pets", headers: auth, body: JSON.stringify({ name: "Growth", categoryId: 1 }) },
          statement: getStatement(max)
        },
        {
          name: `list, page 1, ${KEYS.toLocaleString("en")} keys at random`,
          request: {
            method: "GET",
            path: `/v1/pets?limit=${PAGE}`,
            headers: auth,
            setupRequest: (request) => ({
              ...request,
              headers: { ...request.headers, authorization: `Bearer ${keySecret(1 + Math.floor(Math.random() * KEYS))}` }
            })
          },
          statement: keyStatement(Math.floor(KEYS / 2))
        }
      ]
      for (const operation of operations) {
        await autocannon({ url: server.origin, connections: CONNECTIONS, duration: 2, requests: [operation.request] })
        const [serverBefore, postgresBefore] = [cpuSeconds(server.server.child.pid!), await backendCpu()]
        const result = await autocannon({ url: server.origin, connections: CONNECTIONS, duration: seconds, requests: [operation.request] })
        const [serverCpu, postgresCpu] = [cpuSeconds(server.server.child.pid!) - serverBefore, (await backendCpu()) - postgresBefore]
        const requests = result.requests.total
        const plan = operation.name === "create" ? { buffers: "—", removed: "—" } : await explain(operation.statement)
        const row: Row = {
          size,
          operation: operation.name,
          serverMicros: (serverCpu / requests) * 1e6,
          postgresMicros: (postgresCpu / requests) * 1e6,
          rps: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          errors: result.non2xx + result.errors + result.timeouts,
          ...plan
        }
        rows.push(row)
        console.log(
          `${size.toLocaleString("en").padStart(9)}  ${operation.name.padEnd(34)} server ${row.serverMicros.toFixed(0).padStart(4)} µs/req  ` +
            `PostgreSQL ${row.postgresMicros.toFixed(0).padStart(4)} µs/req  ${row.rps.toFixed(0).padStart(5)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  ` +
            `buffers ${row.buffers}  rows thrown away ${row.removed}  errors ${row.errors}  load ${loadavg()[0]!.toFixed(1)}`
        )
      }
    }
    writeGrowth(rows, { pgVersion, loadAtStart, loadAtEnd: loadavg().map((l) => l.toFixed(1)).join(" ") })
  } finally {
    for (const stop of stops) await stop().catch(() => {})
    await db.end()
    await database.drop()
  }
}

const START = "<!-- growth: written by pnpm bench --growth; the text after the end marker is kept -->"
const END = "<!-- /growth -->"

const writeGrowth = (rows: ReadonlyArray<Row>, info: { pgVersion: string; loadAtStart: string; loadAtEnd: string }) => {
  const lines = [
    START,
    "",
    `Measured by \`pnpm bench --growth\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${cpus()[0]?.model.trim()}), ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.versions.node}, PostgreSQL ${info.pgVersion} on the same machine. ` +
      `${CONNECTIONS} connections, ${seconds} s per operation after 2 s of warm-up; one sold pet in a thousand; ${KEYS.toLocaleString("en")} live keys. ` +
      `Load average (1, 5, 15 min) at the start: ${info.loadAtStart}; at the end: ${info.loadAtEnd}.`,
    "",
    "CPU per request: the server process's, and PostgreSQL's (the bench database's backends), from /proc; they are the",
    "figures that do not move with other work on the machine. Buffers and rows thrown away: EXPLAIN (ANALYZE, BUFFERS)",
    "of the statement the server sends for one such request (the key lookup for the many-keys row; none for create).",
    "",
    "| pets | operation | server µs/req | PostgreSQL µs/req | req/s | p50 ms | p99 ms | buffers | rows thrown away | non-2xx |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) =>
      `| ${r.size.toLocaleString("en")} | ${r.operation} | ${r.serverMicros.toFixed(0)} | ${r.postgresMicros.toFixed(0)} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.buffers} | ${r.removed} | ${r.errors} |`
    ),
    "",
    END
  ].join("\n")
  const previous = readFileSync(resultsFile, "utf8")
  const [at, end] = [previous.indexOf(START), previous.indexOf(END)]
  const next = at !== -1 && end !== -1
    ? previous.slice(0, at) + lines + previous.slice(end + END.length)
    : previous.replace("## Fleet: one, two and three hosts through HAProxy", `## Growth: cost as the work grows\n\n${lines}\n\n## Fleet: one, two and three hosts through HAProxy`)
  writeFileSync(resultsFile, next)
  console.log(`wrote the growth table to ${resultsFile}`)
}

await main()
