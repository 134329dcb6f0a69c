/**
 * `pnpm bench --growth`, quota part: what admitting a new subject costs, and
 * what the store holds, as distinct subjects pile up over one day, from 1,000
 * to 1,000,000 (BENCH_QUOTA_SUBJECTS). The subjects arrive evenly over the day
 * (1M: one every 86 ms of the store's clock, which the bench moves), each
 * admitted once: client addresses (as many /64s as an attacker likes; each
 * needs its minute only) and keys (each counted for the whole day).
 *
 * Both stores are the server's own modules. The in-memory store runs in a
 * child process of its own, so its resident memory is the store's. The
 * PostgreSQL store runs on a database of its own beside DATABASE_URL's,
 * admissions sent 500 at a time (one `quota_admit_many`, as concurrent
 * requests are), with the sweep the server runs every 5 minutes run every 5
 * minutes of the store's clock; its time is counted in the admissions'.
 *
 * Writes its table into bench/RESULTS.md between the quota-growth markers.
 */
import { createTestDatabase } from "@petstore/test-support"
import { AppConfig } from "@petstore/server/config"
import { parsePostgresUrl } from "@petstore/server/net/postgresUrl"
import { Database } from "@petstore/server/db/Database"
import { DAY_MILLIS, QuotaStore } from "@petstore/server/quota/QuotaStore"
import { Clock, Effect, Layer, Option, Redacted, Result } from "effect"
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import postgres from "postgres"

const TOTAL = Number(process.env.BENCH_QUOTA_SUBJECTS ?? 1_000_000)
const CHECKPOINTS = [1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= TOTAL)
const BATCH = 500
/** Admissions timed before each checkpoint. */
const WINDOW = 5_000
const SWEEP_EVERY_MILLIS = 5 * 60_000
const DAY_START = Date.UTC(2026, 0, 1)
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))

type Kind = "address" | "key"
interface Point {
  readonly store: string
  readonly kind: Kind
  readonly subjects: number
  readonly microsPerAdmission: number
  readonly held: string
  readonly memory: string
}

/** The store's clock: the bench moves it, so a day passes in minutes. */
const simulatedClock = (base: Clock.Clock, now: { millis: number }): Clock.Clock =>
  Object.assign(Object.create(base) as Clock.Clock, {
    currentTimeMillisUnsafe: () => now.millis,
    currentTimeMillis: Effect.sync(() => now.millis),
    currentTimeNanosUnsafe: () => BigInt(now.millis) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(now.millis) * 1_000_000n)
  })

const subjectOf = (kind: Kind, n: number) =>
  kind === "address"
    ? `address:2001:db8:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}::/64`
    : `key:key_${n.toString(16).padStart(16, "0")}`

const request = (kind: Kind, n: number, now: number) => ({
  subject: subjectOf(kind, n),
  now,
  perMinute: 60,
  perDay: kind === "address" ? 2_147_483_647 : 1_000,
  banThreshold: kind === "address" ? 2_147_483_647 : 60,
  banMillis: 900_000,
  consume: true
})

/**
 * Admits TOTAL subjects of a kind, BATCH at a time (at once, or one after
 * another), over one day of the store's clock; at each checkpoint, the mean
 * cost of the last WINDOW admissions.
 */
const pileUp = (
  kind: Kind,
  concurrent: boolean,
  total: number,
  observe: (subjects: number) => Effect.Effect<{ held: string; memory: string }, unknown, QuotaStore>
) =>
  Effect.gen(function*() {
    const store = yield* QuotaStore
    const clock = yield* Clock.Clock
    const points: Array<Omit<Point, "store">> = []
    let windowStarted = 0
    let lastSweep = DAY_START
    const batch = BATCH
    for (let n = 0; n < total; n += batch) {
      const now = DAY_START + Math.floor((n * DAY_MILLIS) / total)
      ;(clock as unknown as { setTo: (millis: number) => void }).setTo(now)
      const checkpoint = CHECKPOINTS.find((c) => c > n && c <= n + batch)
      if (CHECKPOINTS.some((c) => c - WINDOW <= n && n < c) && windowStarted === 0) windowStarted = performance.now()
      if (now - lastSweep >= SWEEP_EVERY_MILLIS) {
        lastSweep = now
        yield* store.expire
      }
      yield* Effect.forEach(
        Array.from({ length: Math.min(batch, total - n) }, (_, i) => request(kind, n + i, now)),
        (admission) => store.admit(admission),
        { concurrency: concurrent ? "unbounded" : 1, discard: true }
      )
      if (checkpoint !== undefined) {
        const timed = Math.min(WINDOW, checkpoint)
        points.push({
          kind,
          subjects: checkpoint,
          microsPerAdmission: ((performance.now() - windowStarted) * 1000) / timed,
          ...(yield* observe(checkpoint))
        })
        windowStarted = 0
      }
    }
    return points
  })

const clockLayer = () => {
  const now = { millis: DAY_START }
  const clock = Object.assign(simulatedClock(Clock.Clock.defaultValue(), now), {
    setTo: (millis: number) => (now.millis = millis)
  })
  return Layer.succeed(Clock.Clock, clock)
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(bytes < 10 * 2 ** 20 ? 1 : 0)

/** The in-memory store, in this (child) process: its RSS and heap are the store's. */
const memoryChild = async (kind: Kind) => {
  // A warm-up on a store thrown away: the 1k figure is then the store's, not the JIT's.
  await Effect.runPromise(
    pileUp(kind, false, 20_000, () => Effect.succeed({ held: "", memory: "" })).pipe(
      Effect.provide(QuotaStore.memory),
      Effect.provide(clockLayer())
    )
  )
  const points = await Effect.runPromise(
    pileUp(kind, false, TOTAL, () =>
      Effect.sync(() => {
        const usage = process.memoryUsage()
        return { held: "", memory: `${mib(usage.rss)} / ${mib(usage.heapUsed)}` }
      })).pipe(Effect.provide(QuotaStore.memory), Effect.provide(clockLayer()))
  )
  process.stdout.write(JSON.stringify(points))
}

const postgresSeries = async (kind: Kind): Promise<ReadonlyArray<Point>> => {
  const database = await createTestDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    "petstore_quota_growth"
  )
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  try {
    const config = AppConfig.layerWith({
      databaseUrl: Option.some(Redacted.make(Result.getOrThrow(parsePostgresUrl(database.url))))
    })
    const store = QuotaStore.postgres.pipe(Layer.provide(Database.layer), Layer.provide(config))
    const points = await Effect.runPromise(
      Effect.scoped(
        pileUp(kind, true, TOTAL, () =>
          Effect.promise(async () => {
            const [row] = await sql<Array<{ rows: number; bytes: string }>>`
              SELECT count(*)::integer AS rows, pg_total_relation_size('quota_usage')::text AS bytes FROM quota_usage`
            return { held: row!.rows.toLocaleString("en"), memory: `${mib(Number(row!.bytes))} (table + indexes)` }
          })).pipe(Effect.provide(store), Effect.provide(clockLayer()))
      )
    )
    return points.map((point) => ({ store: "PostgreSQL", ...point }))
  } finally {
    await sql.end()
    await database.drop()
  }
}

const START = "<!-- quota-growth: written by pnpm bench --growth; the text after the end marker is kept -->"
const END = "<!-- /quota-growth -->"

const write = async (points: ReadonlyArray<Point>, info: { loadAtStart: string; loadAtEnd: string }) => {
  const sql = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", { max: 1 })
  const [version] = await sql<Array<{ server_version: string }>>`SHOW server_version`
  const pgVersion = version?.server_version ?? "?"
  await sql.end()
  const lines = [
    START,
    "",
    `Measured by \`pnpm bench --growth\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${
      cpus()[0]?.model.trim()
    }), ` +
    `${
      (totalmem() / 2 ** 30).toFixed(0)
    } GiB; Node ${process.versions.node}, PostgreSQL ${pgVersion} on the same machine. ` +
    `${TOTAL.toLocaleString("en")} distinct subjects admitted once each, evenly over one day of the store's clock. ` +
    `Load average (1, 5, 15 min) at the start: ${info.loadAtStart}; at the end: ${info.loadAtEnd}.`,
    "",
    "µs per admission: the mean over the 5,000 admissions before the count (fewer below 5,000), sweeps included; the in-memory",
    "store's one after another, the PostgreSQL store's 500 to a statement. Held: the rows in `quota_usage`. Memory: the in-memory",
    "store's process, RSS / heap used (MiB); PostgreSQL's table with its indexes (MiB).",
    "",
    "| store | subjects | distinct subjects so far | µs per admission | held | memory MiB |",
    "| --- | --- | --- | --- | --- | --- |",
    ...points.map((p) =>
      `| ${p.store} | ${p.kind === "address" ? "client addresses (/64s)" : "keys"} | ${
        p.subjects.toLocaleString("en")
      } | ${p.microsPerAdmission.toFixed(1)} | ${p.held || "–"} | ${p.memory} |`
    ),
    "",
    END
  ].join("\n")
  const previous = readFileSync(resultsFile, "utf8")
  const [at, end] = [previous.indexOf(START), previous.indexOf(END)]
  const next = at !== -1 && end !== -1
    ? previous.slice(0, at) + lines + previous.slice(end + END.length)
    : previous.replace(
      "### Reading the growth curves",
      `### Quota state: 1k to 1M subjects in a day\n\n${lines}\n\n### Reading the growth curves`
    )
  writeFileSync(resultsFile, next)
  console.log(`wrote the quota growth table to ${resultsFile}`)
}

const main = async () => {
  const loadAtStart = loadavg().map((l) => l.toFixed(1)).join(", ")
  const points: Array<Point> = []
  for (const kind of ["address", "key"] as const) {
    const output = execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child", kind], {
      encoding: "utf8",
      maxBuffer: 1 << 20
    })
    points.push(
      ...(JSON.parse(output) as Array<Omit<Point, "store">>).map((point) => ({ store: "in-memory", ...point }))
    )
    console.log(`in-memory store, ${kind} subjects: done`)
  }
  for (const kind of ["address", "key"] as const) {
    points.push(...await postgresSeries(kind))
    console.log(`PostgreSQL store, ${kind} subjects: done`)
  }
  await write(points, { loadAtStart, loadAtEnd: loadavg().map((l) => l.toFixed(1)).join(", ") })
}

const child = process.argv.indexOf("--child")
if (child !== -1) await memoryChild(process.argv[child + 1] as Kind)
else await main()
