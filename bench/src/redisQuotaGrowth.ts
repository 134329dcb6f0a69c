/**
 * `pnpm bench --redis-growth` (and part of `--growth`): what the Redis quota store holds, and what an admission
 * costs, as distinct subjects pile up to 1,000,000 (BENCH_REDIS_SUBJECTS). The subjects are keys (`key:<id>`,
 * counted for the whole day: the most a subject holds), admitted once each by the store's own script
 * (`admitScript.ts`) through the store's own client (`redisConnection.ts`), under the keys the server makes
 * (`subjectKey`), on Redis's clock as the server runs it: what a million keys each sending one request in a day
 * leave behind, without a million HTTP keys. Filling is pipelined (2,000 admissions in flight); at each count,
 * 2,000 more are admitted one at a time and timed, then Redis's `INFO memory` is read.
 *
 * A `redis-server` of its own on a free port (never 6379), no persistence. Writes its table into
 * bench/RESULTS.md between its markers, unless `--quick` (then it only prints).
 */
import { parseRedisUrl } from "@petstore/server/net/redisUrl"
import { EXPIRY_GRACE_MILLIS } from "@petstore/server/quota/QuotaStore"
import { ADMIT_SCRIPT, ADMIT_SCRIPT_SHA1 } from "@petstore/server/quota/redis/admitScript"
import { connectRedis, type RedisConnection } from "@petstore/server/quota/redis/redisConnection"
import { subjectKey } from "@petstore/server/quota/redis/RedisQuotaStore"
import { startRedis } from "@petstore/test-support"
import { Effect, Result } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import { cpuSeconds } from "./processes.ts"

const TOTAL = Number(process.env.BENCH_REDIS_SUBJECTS ?? 1_000_000)
const CHECKPOINTS = [1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= TOTAL)
const IN_FLIGHT = 2_000
/** Admissions timed one at a time at each count (new subjects: they count towards it); half the count below 4,000. */
const TIMED = 2_000
const quick = process.argv.includes("--quick")
const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url))
const script = { text: ADMIT_SCRIPT, sha1: ADMIT_SCRIPT_SHA1 }

/** A key's subject as Quota.ts makes it (`key:<id>`), with the limits of a free key: counted all day. */
const admit = (connection: RedisConnection, n: number) =>
  connection.runScript(script, subjectKey(`key:key_${n.toString(16).padStart(16, "0")}`), [
    "",
    "60",
    "1000",
    "60",
    "900000",
    "1",
    "1",
    String(EXPIRY_GRACE_MILLIS)
  ])

interface Point {
  readonly subjects: number
  readonly keys: number
  readonly usedMemoryMiB: number
  readonly bytesPerSubject: number
  readonly p50Micros: number
  readonly p99Micros: number
  /** Redis's CPU per admission while filling up to this count (pipelined). */
  readonly redisMicrosPerAdmission: number
  readonly admissionsPerSecond: number
  /** The TTL of the last subject admitted: until its day ends, plus the grace. */
  readonly ttlHours: number
}

const info = (text: string, field: string) => Number(new RegExp(`^${field}:(\\d+)`, "m").exec(text)?.[1] ?? NaN)

const main = async () => {
  const loadAtStart = loadavg().map((l) => l.toFixed(1)).join(", ")
  const redis = await startRedis()
  const node = redis.nodes[0]!
  try {
    const server = await node.cli("info", "server")
    const redisPid = info(server, "process_id")
    const redisVersion = /redis_version:(\S+)/.exec(server)?.[1] ?? "?"
    const baseline = info(await node.cli("info", "memory"), "used_memory")
    const points = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const connection = yield* connectRedis({ type: "single", url: Result.getOrThrow(parseRedisUrl(redis.url)) })
      return yield* Effect.promise(async () => {
        const points: Array<Point> = []
        let admitted = 0
        for (const checkpoint of CHECKPOINTS) {
          const fillTo = checkpoint - Math.min(TIMED, Math.floor(checkpoint / 2))
          const [cpuBefore, began, from] = [cpuSeconds(redisPid), performance.now(), admitted]
          while (admitted < fillTo) {
            const batch = Math.min(IN_FLIGHT, fillTo - admitted)
            await Promise.all(Array.from({ length: batch }, (_, i) => admit(connection, admitted + i)))
            admitted += batch
          }
          const filled = admitted - from
          const [fillCpu, fillSeconds] = [cpuSeconds(redisPid) - cpuBefore, (performance.now() - began) / 1000]
          const timings: Array<number> = []
          while (admitted < checkpoint) {
            const start = performance.now()
            await admit(connection, admitted++)
            timings.push(1000 * (performance.now() - start))
          }
          timings.sort((a, b) => a - b)
          const memory = await node.cli("info", "memory")
          const keys = Number((await node.cli("dbsize")).trim())
          const ttl = Number(
            (await node.cli("pttl", subjectKey(`key:key_${(admitted - 1).toString(16).padStart(16, "0")}`))).trim()
          )
          const used = info(memory, "used_memory")
          const point: Point = {
            subjects: checkpoint,
            keys,
            usedMemoryMiB: used / 2 ** 20,
            bytesPerSubject: (used - baseline) / keys,
            p50Micros: timings[Math.floor(timings.length / 2)]!,
            p99Micros: timings[Math.floor(timings.length * 0.99)]!,
            redisMicrosPerAdmission: filled === 0 ? NaN : 1e6 * fillCpu / filled,
            admissionsPerSecond: filled === 0 ? NaN : filled / fillSeconds,
            ttlHours: ttl / 3_600_000
          }
          points.push(point)
          console.log(
            `Redis quota store, ${checkpoint.toLocaleString("en")} subjects: ${
              keys.toLocaleString("en")
            } keys, used_memory ${point.usedMemoryMiB.toFixed(1)} MiB (${
              point.bytesPerSubject.toFixed(0)
            } B a subject), one admission p50 ${point.p50Micros.toFixed(0)} µs p99 ${
              point.p99Micros.toFixed(0)
            } µs; filling ${point.admissionsPerSecond.toFixed(0)}/s, Redis CPU ${
              point.redisMicrosPerAdmission.toFixed(1)
            } µs an admission; TTL ${point.ttlHours.toFixed(1)} h`
          )
        }
        return points
      })
    })))
    const loadAtEnd = loadavg().map((l) => l.toFixed(1)).join(", ")
    console.log(`load at start ${loadAtStart}, at end ${loadAtEnd}; Redis ${redisVersion}`)
    if (!quick) write(points, { loadAtStart, loadAtEnd, redisVersion })
  } finally {
    await redis.stop()
  }
}

const START =
  "<!-- redis-quota-growth: written by pnpm bench --growth or --redis-growth; the text after the end marker is kept -->"
const END = "<!-- /redis-quota-growth -->"

const write = (points: ReadonlyArray<Point>, run: { loadAtStart: string; loadAtEnd: string; redisVersion: string }) => {
  const lines = [
    START,
    "",
    `Measured by \`pnpm bench --redis-growth\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${
      cpus()[0]?.model.trim()
    }), ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.versions.node}, Redis ${run.redisVersion} (its own ` +
    `\`redis-server\`, no persistence) on the same machine. ${
      TOTAL.toLocaleString("en")
    } keys admitted once each by the store's script, on Redis's clock. Load average (1, 5, 15 min) at the start: ${run.loadAtStart}; at the end: ${run.loadAtEnd}.`,
    "",
    "One admission: the round trip of the script for a new subject, one at a time, over the last 2,000 before the",
    "count (client time, so it includes this process's own scheduling). Redis CPU: `redis-server`'s, from /proc,",
    "per admission while filling with 2,000 in flight. Bytes a subject: `used_memory` above the empty server's, over",
    "the keys held. The PostgreSQL store at the same counts: the table above (`quota_usage`, 245 MiB at 1M keys).",
    "",
    "| subjects | keys held | used_memory MiB | bytes a subject | admission p50 µs | admission p99 µs | fill admissions/s | Redis CPU µs an admission | a key's TTL h |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...points.map((p) =>
      `| ${p.subjects.toLocaleString("en")} | ${p.keys.toLocaleString("en")} | ${p.usedMemoryMiB.toFixed(1)} | ${
        p.bytesPerSubject.toFixed(0)
      } | ${p.p50Micros.toFixed(0)} | ${p.p99Micros.toFixed(0)} | ${p.admissionsPerSecond.toFixed(0)} | ${
        p.redisMicrosPerAdmission.toFixed(1)
      } | ${p.ttlHours.toFixed(1)} |`
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
      `### Quota state on Redis: to 1M subjects\n\n${lines}\n\n### Reading the growth curves`
    )
  writeFileSync(resultsFile, next)
  console.log(`wrote the Redis quota growth table to ${resultsFile}`)
}

await main()
