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
 * Orders grow beside the pets, to 10,000 then 1,000,000 orders, spread over
 * the 10,000 keys, about one in a thousand open (`placed`): a staff key's
 * first page, a deep page and `status=placed`, one customer's own orders, an
 * order by id, and placing an order (each takes an available pet of its own).
 *
 * The statements explained are the server's own (./statements.ts runs its
 * services and keeps what they send), prepared and run five times first as the
 * server's prepared statements are, so the plan is the one PostgreSQL settles
 * on for them (after five runs it may switch to a generic plan). A placement
 * is explained once, in a transaction rolled back.
 *
 * Writes its tables into bench/RESULTS.md between the growth markers.
 */
import { ADMIN_TOKEN, serverEntry, createKey, createTestDatabase } from "@petstore/test-support"
import autocannon from "autocannon"
import { createHash } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { cpuSeconds, startLogged } from "./processes.ts"
import * as statements from "./statements.ts"
import type { Statement } from "./statements.ts"

const seconds = Number(process.env.BENCH_GROWTH_SECONDS ?? 6)
const sizes = (process.env.BENCH_GROWTH_SIZES ?? "10000,1000000").split(",").map(Number)
const KEYS = Number(process.env.BENCH_GROWTH_KEYS ?? 10_000)
const CONNECTIONS = 64
const PAGE = 20
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const cursor = (afterId: number) => Buffer.from(`after:${afterId}`).toString("base64url")
const keySecret = (n: number) => `psk_growth_${n.toString().padStart(6, "0")}`
/** Available pets created before each measurement of placing an order: more than it places. */
const PLACE_POOL = 60_000

interface Row {
  /** What grows: the pets, or the orders. */
  readonly table: "pets" | "orders"
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

/** The key lookup of `auth/ApiKeys.ts` (a copy: that service needs more than a Database to run). */
const keyStatement = (n: number): Statement => ({
  text:
    "SELECT id, name, plan, per_minute, per_day, created_at FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL",
  values: [createHash("sha256").update(keySecret(n)).digest("hex")]
})

const main = async () => {
  const database = await createTestDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    "petstore_growth"
  )
  const db = postgres(database.url, { max: 1, onnotice: () => {} })
  const stops: Array<() => Promise<void>> = []
  try {
    const server = await startLogged("growth", serverEntry(import.meta.url), { DATABASE_URL: database.url })
    stops.push(server.server.stop)
    const unbound = { perMinute: 2_000_000_000, perDay: 2_000_000_000 }
    const { id: keyId, key } = await createKey(server.admin, "enterprise", unbound)
    const { key: staffKey } = await createKey(server.admin, "enterprise", unbound, ADMIN_TOKEN, "staff")
    // 10,000 live keys, inserted as the admin API would (an enterprise key's own limits), with secrets we know.
    await db`INSERT INTO api_keys (id, secret_hash, name, plan, per_minute, per_day)
      SELECT 'key_growth' || g, encode(sha256(convert_to('psk_growth_' || lpad(g::text, 6, '0'), 'UTF8')), 'hex'), 'growth', 'enterprise', 2000000000, 2000000000
      FROM generate_series(1, ${KEYS}::integer) AS g`
    const [{ version: pgVersion }] = await db`SELECT current_setting('server_version') AS version` as unknown as [
      { version: string }
    ]
    const backendCpu = async () => {
      const pids =
        await db`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'petstore'`
      return pids.reduce((sum, { pid }) => {
        try {
          return sum + cpuSeconds(pid as number)
        } catch {
          return sum
        }
      }, 0)
    }
    const literal = (value: unknown) =>
      value === null || value === undefined ?
        "NULL"
        : typeof value === "number" || typeof value === "boolean" ?
        String(value)
        : `'${String(value).replaceAll("'", "''")}'`
    /** The plan PostgreSQL settles on for the statement prepared, as the server's are, after five runs. */
    const explain = async (statement: Statement) => {
      await db.unsafe(`PREPARE growth_statement AS ${statement.text}`)
      const execute = `EXECUTE growth_statement${
        statement.values.length > 0 ? `(${statement.values.map(literal).join(", ")})` : ""
      }`
      let row: unknown
      try {
        for (let run = 0; run < 5; run++) await db.unsafe(execute)
        ;[row] = await db.unsafe(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${execute}`)
      } finally {
        await db.unsafe("DEALLOCATE growth_statement")
      }
      return planFigures(row)
    }
    /** A write's plan, in a transaction rolled back, so that explaining it changes nothing. */
    const explainWrite = async (statement: Statement) => {
      let row: unknown
      await db.begin(async (tx) => {
        ;[row] = await tx.unsafe(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`,
          statement.values as Array<string>
        )
        throw rolledBack
      }).catch((error: unknown) => {
        if (error !== rolledBack) throw error
      })
      return planFigures(row)
    }
    const rolledBack = new Error("rolled back")
    const planFigures = (row: unknown) => {
      const plan = (row as { "QUERY PLAN": Array<{ Plan: PlanNode }> })["QUERY PLAN"][0]!.Plan
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
    const staffAuth = { authorization: `Bearer ${staffKey}`, "content-type": "application/json" }
    const rows: Array<Row> = []
    let stored = 0
    let storedOrders = 0
    let lastOrderedPet = 0
    const loadAtStart = loadavg().map((l) => l.toFixed(1)).join(" ")

    interface Operation {
      readonly name: string
      readonly request: autocannon.Request
      /** The figures of the plan of the statement one such request sends; none for create. */
      readonly plan?: () => Promise<{ buffers: string; removed: string }>
    }
    const measureOperation = async (table: Row["table"], size: number, operation: Operation) => {
      await autocannon({ url: server.origin, connections: CONNECTIONS, duration: 2, requests: [operation.request] })
      const [serverBefore, postgresBefore] = [cpuSeconds(server.server.child.pid!), await backendCpu()]
      const result = await autocannon({
        url: server.origin,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [operation.request]
      })
      const [serverCpu, postgresCpu] = [
        cpuSeconds(server.server.child.pid!) - serverBefore,
        (await backendCpu()) - postgresBefore
      ]
      const requests = result.requests.total
      const plan = operation.plan === undefined ? { buffers: "—", removed: "—" } : await operation.plan()
      const row: Row = {
        table,
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
        `${size.toLocaleString("en").padStart(9)} ${table.padEnd(6)} ${operation.name.padEnd(40)} server ${
          row.serverMicros.toFixed(0).padStart(4)
        } µs/req  ` +
          `PostgreSQL ${row.postgresMicros.toFixed(0).padStart(4)} µs/req  ${
            row.rps.toFixed(0).padStart(5)
          } req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  ` +
          `buffers ${row.buffers}  rows thrown away ${row.removed}  errors ${row.errors}  load ${
            loadavg()[0]!.toFixed(1)
          }`
      )
    }

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
      const petOperations: ReadonlyArray<Operation> = [
        {
          name: "list, page 1",
          request: { method: "GET", path: `/v1/pets?limit=${PAGE}`, headers: auth },
          plan: async () => explain(await statements.listPets(PAGE, undefined, 0))
        },
        {
          name: `list, page ${deepPage.toLocaleString("en")}`,
          request: { method: "GET", path: `/v1/pets?limit=${PAGE}&cursor=${cursor(deepAfter)}`, headers: auth },
          plan: async () => explain(await statements.listPets(PAGE, undefined, deepAfter))
        },
        {
          name: "list status=sold, page 1",
          request: { method: "GET", path: `/v1/pets?limit=${PAGE}&status=sold`, headers: auth },
          plan: async () => explain(await statements.listPets(PAGE, "sold", 0))
        },
        {
          name: "list status=sold, after 90% of ids",
          request: {
            method: "GET",
            path: `/v1/pets?limit=${PAGE}&status=sold&cursor=${cursor(soldAfter)}`,
            headers: auth
          },
          plan: async () => explain(await statements.listPets(PAGE, "sold", soldAfter))
        },
        {
          name: "get by id (random)",
          request: {
            method: "GET",
            headers: auth,
            setupRequest: (request) => ({
              ...request,
              path: `/v1/pets/${min + Math.floor(Math.random() * (max - min + 1))}`
            })
          },
          plan: async () => explain(await statements.getPet(Math.floor((min + max) / 2)))
        },
        {
          name: "create",
          request: {
            method: "POST",
            path: "/v1/pets",
            headers: auth,
            body: JSON.stringify({ name: "Growth", categoryId: 1 })
          }
        },
        {
          name: `list, page 1, ${KEYS.toLocaleString("en")} keys at random`,
          request: {
            method: "GET",
            path: `/v1/pets?limit=${PAGE}`,
            headers: auth,
            setupRequest: (request) => ({
              ...request,
              headers: {
                ...request.headers,
                authorization: `Bearer ${keySecret(1 + Math.floor(Math.random() * KEYS))}`
              }
            })
          },
          plan: () => explain(keyStatement(Math.floor(KEYS / 2)))
        }
      ]
      for (const operation of petOperations) await measureOperation("pets", size, operation)

      // Orders to `size`, one per pet in id order, over the 10,000 keys in turn: delivered for a sold pet, placed
      // (its pet held pending) for one pending pet in 500, about one order in a thousand, cancelled otherwise.
      process.stdout.write(`filling the orders to ${size.toLocaleString("en")}… `)
      const [filled] = await db`WITH source AS (
          SELECT id, status, row_number() OVER (ORDER BY id) AS n FROM pets
          WHERE id > ${lastOrderedPet}::bigint AND NOT EXISTS (SELECT 1 FROM orders WHERE orders.pet_id = pets.id)
          ORDER BY id LIMIT ${Math.max(0, size - storedOrders)}::integer
        ), inserted AS (
          INSERT INTO orders (pet_id, open_pet_id, api_key_id, status)
          SELECT id, CASE WHEN status = 'pending' AND n % 500 = 0 THEN id END, 'key_growth' || (1 + n % ${KEYS}::integer),
            CASE WHEN status = 'pending' AND n % 500 = 0 THEN 'placed' WHEN status = 'sold' THEN 'delivered' ELSE 'cancelled' END
          FROM source ORDER BY id
          RETURNING pet_id
        ) SELECT coalesce(max(pet_id), 0)::bigint AS last FROM inserted`
      lastOrderedPet = Math.max(lastOrderedPet, Number(filled!.last))
      await db`VACUUM ANALYZE orders`
      const [orderBounds] =
        await db`SELECT count(*)::integer AS count, min(id)::integer AS min, max(id)::integer AS max,
        count(*) FILTER (WHERE status = 'placed')::integer AS placed, count(*) FILTER (WHERE api_key_id = 'key_growth1')::integer AS own
        FROM orders`
      const [orderCount, orderMin, orderMax] = [
        Number(orderBounds!.count),
        Number(orderBounds!.min),
        Number(orderBounds!.max)
      ]
      storedOrders = orderCount
      console.log(`done: ${orderCount.toLocaleString("en")} orders, ${orderBounds!.placed} placed`)
      const orderDeepPage = Math.min(1000, Math.floor(orderCount / PAGE) - 1)
      const orderDeepAfter = orderMin - 1 + (orderDeepPage - 1) * PAGE
      const customer = { _tag: "Own", apiKeyId: "key_growth1" } as const
      const every = { _tag: "Every" } as const
      const orderOperations: ReadonlyArray<Operation> = [
        {
          name: "orders, page 1 (staff: every order)",
          request: { method: "GET", path: `/v1/store/orders?limit=${PAGE}`, headers: staffAuth },
          plan: async () => explain(await statements.listOrders(every, PAGE, undefined, 0))
        },
        {
          name: `orders, page ${orderDeepPage.toLocaleString("en")} (staff)`,
          request: {
            method: "GET",
            path: `/v1/store/orders?limit=${PAGE}&cursor=${cursor(orderDeepAfter)}`,
            headers: staffAuth
          },
          plan: async () => explain(await statements.listOrders(every, PAGE, undefined, orderDeepAfter))
        },
        {
          name: "orders status=placed, page 1 (staff)",
          request: { method: "GET", path: `/v1/store/orders?limit=${PAGE}&status=placed`, headers: staffAuth },
          plan: async () => explain(await statements.listOrders(every, PAGE, "placed", 0))
        },
        {
          name: `one customer's orders (${Number(orderBounds!.own).toLocaleString("en")}), page 1`,
          request: {
            method: "GET",
            path: `/v1/store/orders?limit=${PAGE}`,
            headers: { ...auth, authorization: `Bearer ${keySecret(1)}` }
          },
          plan: async () => explain(await statements.listOrders(customer, PAGE, undefined, 0))
        },
        {
          name: "order by id (staff, random)",
          request: {
            method: "GET",
            headers: staffAuth,
            setupRequest: (request) => ({
              ...request,
              path: `/v1/store/orders/${orderMin + Math.floor(Math.random() * (orderMax - orderMin + 1))}`
            })
          },
          plan: async () => explain(await statements.getOrder(every, Math.floor((orderMin + orderMax) / 2)))
        }
      ]
      for (const operation of orderOperations) await measureOperation("orders", orderCount, operation)

      // Placing: every order takes an available pet of its own, from pets made for it, in id order.
      const [pool] = await db`WITH pool AS (
          INSERT INTO pets (name, category_id, status)
          SELECT 'Place ' || g, 1, 'available' FROM generate_series(1, ${PLACE_POOL}::integer) AS g RETURNING id
        ) SELECT min(id)::integer AS first, max(id)::integer AS last FROM pool`
      await db`VACUUM ANALYZE pets`
      let nextPet = Number(pool!.first)
      const lastPet = Number(pool!.last)
      await measureOperation("orders", orderCount, {
        name: "place an order",
        request: {
          method: "POST",
          path: "/v1/store/orders",
          headers: auth,
          // Past the pool's end every order asks for its last pet, already pending: 409s, counted as non-2xx.
          setupRequest: (request) => ({
            ...request,
            body: JSON.stringify({ petId: nextPet <= lastPet ? nextPet++ : lastPet })
          })
        },
        plan: async () => explainWrite(await statements.placeOrder(lastPet, keyId))
      })
      const [after] = await db`SELECT count(*)::integer AS count FROM orders`
      storedOrders = Number(after!.count)
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
    `Measured by \`pnpm bench --growth\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${
      cpus()[0]?.model.trim()
    }), ` +
    `${
      (totalmem() / 2 ** 30).toFixed(0)
    } GiB; Node ${process.versions.node}, PostgreSQL ${info.pgVersion} on the same machine. ` +
    `${CONNECTIONS} connections, ${seconds} s per operation after 2 s of warm-up; one sold pet in a thousand; ${
      KEYS.toLocaleString("en")
    } live keys. ` +
    `Load average (1, 5, 15 min) at the start: ${info.loadAtStart}; at the end: ${info.loadAtEnd}.`,
    "",
    "CPU per request: the server process's, and PostgreSQL's (the bench database's backends), from /proc; they are the",
    "figures that do not move with other work on the machine. Buffers and rows thrown away: EXPLAIN (ANALYZE, BUFFERS)",
    "of the statement the server sends for one such request, taken from the server's own services and prepared and run",
    "five times first, as the server's are, so that it is the plan PostgreSQL settles on (the key lookup for the many-keys",
    "row; none for create; a placement explained once, rolled back).",
    "",
    ...(["pets", "orders"] as const).flatMap((table) => [
      `| ${table} | operation | server µs/req | PostgreSQL µs/req | req/s | p50 ms | p99 ms | buffers | rows thrown away | non-2xx |`,
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...rows.filter((r) => r.table === table).map((r) =>
        `| ${r.size.toLocaleString("en")} | ${r.operation} | ${r.serverMicros.toFixed(0)} | ${
          r.postgresMicros.toFixed(0)
        } | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.buffers} | ${r.removed} | ${r.errors} |`
      ),
      ""
    ]),
    END
  ].join("\n")
  const previous = readFileSync(resultsFile, "utf8")
  const [at, end] = [previous.indexOf(START), previous.indexOf(END)]
  const next = at !== -1 && end !== -1
    ? previous.slice(0, at) + lines + previous.slice(end + END.length)
    : previous.replace(
      "## Fleet: one, two and three hosts through HAProxy",
      `## Growth: cost as the work grows\n\n${lines}\n\n## Fleet: one, two and three hosts through HAProxy`
    )
  writeFileSync(resultsFile, next)
  console.log(`wrote the growth table to ${resultsFile}`)
}

await main()
