/**
 * Bytes allocated per request (issue 35): the compiled server as the bench runs it (the shipped Node flags,
 * request log at Info to a file, PostgreSQL quota store), with ./allocationProbe.ts loaded, answering
 * authenticated `GET /v1/pets?limit=20` at a steady rate over 64 connections; after a warm-up, V8's sampling
 * heap profiler runs for BENCH_ALLOCATION_SECONDS (20) while the probe counts requests. Prints KiB per request
 * and the frames that allocate most. `node bench/src/allocation.ts` after `pnpm build`; BENCH_SERVER_ENTRY
 * measures another build (e.g. a copy of an older commit's dist inside apps/server, for an A/B), and
 * BENCH_ALLOCATION_ROUNDS (1) repeats the measured window on the same server.
 */
import { serverEntry, createKey, createTestDatabase } from "@petstore/test-support"
import autocannon from "autocannon"
import { readFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { insertListPets } from "./listPets.ts"
import { startLogged } from "./processes.ts"

const seconds = Number(process.env.BENCH_ALLOCATION_SECONDS ?? 20)
const rounds = Number(process.env.BENCH_ALLOCATION_ROUNDS ?? 1)
const rate = Number(process.env.BENCH_SOAK_RATE ?? 1000)
const entry = process.env.BENCH_SERVER_ENTRY ?? serverEntry(import.meta.url)
const shippedNodeOptions = (() => {
  const { scripts } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
  return (/NODE_OPTIONS=\\?"([^"$]*)/.exec(scripts.start)?.[1] ?? "").trim()
})()
const serverNodeOptions = (process.env.BENCH_SERVER_NODE_OPTIONS ?? shippedNodeOptions).split(" ").filter(Boolean)
const probe = fileURLToPath(new URL("./allocationProbe.ts", import.meta.url))

/** With BENCH_SOAK_RATE=0 no request is sent: what the server allocates on its own, per second. */
const idleResult = { requests: { average: 0 }, non2xx: 0, errors: 0 }
const load = () => loadavg().map((l) => l.toFixed(1)).join(" ")

const main = async () => {
  const database = await createTestDatabase(
    process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    "petstore_alloc"
  )
  const profileFile = join(tmpdir(), `petstore-allocation-${process.pid}.json`)
  const target = await startLogged("allocation", entry, {
    DATABASE_URL: database.url,
    ALLOCATION_PROFILE_FILE: profileFile,
    ALLOCATION_STACK_DEPTH: process.env.ALLOCATION_STACK_DEPTH ?? "8"
  }, { nodeOptions: [...serverNodeOptions, `--import=${probe}`] })
  const pid = target.server.child.pid!
  try {
    const db = postgres(database.url, { max: 1, onnotice: () => {} })
    await insertListPets(db)
    await db`VACUUM ANALYZE pets`
    await db.end()
    const { key } = await createKey(target.admin, "enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
    const drive = async (duration: number) =>
      rate === 0 ? (await new Promise((resolve) => setTimeout(resolve, duration * 1000)), idleResult) : autocannon({
        url: target.origin,
        connections: 64,
        duration,
        overallRate: rate,
        requests: [{ method: "GET", path: "/v1/pets?limit=20", headers: { authorization: `Bearer ${key}` } }]
      })
    await drive(10)
    for (let round = 1; round <= rounds; round++) {
      const running = drive(seconds + 4)
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      process.kill(pid, "SIGUSR2")
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
      process.kill(pid, "SIGUSR2")
      const result = await running
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      const { requests, bytes, sites, stacks } = JSON.parse(readFileSync(profileFile, "utf8")) as {
        requests: number
        bytes: number
        sites: Array<{ name: string; size: number }>
        stacks: Array<{ name: string; size: number }>
      }
      const perRequest = (size: number) => (size / requests / 1024).toFixed(2).padStart(6)
      if (process.env.BENCH_ALLOCATION_SITES !== "0") {
        console.log("\nKiB/request by allocating frame:")
        for (const site of sites.slice(0, 45)) console.log(`${perRequest(site.size)}  ${site.name}`)
        console.log("\nKiB/request by stack (innermost first):")
        const only = process.env.BENCH_ALLOCATION_GREP
        const shown = only === undefined ? stacks : stacks.filter((stack) => stack.name.includes(only))
        for (const stack of shown.slice(0, Number(process.env.BENCH_ALLOCATION_STACKS ?? 40))) {
          console.log(`${perRequest(stack.size)}  ${stack.name}`)
        }
      }
      console.log(
        `round ${round}: ${(bytes / requests / 1024).toFixed(1)} KiB allocated per request over ${requests} requests ` +
          `(${result.requests.average.toFixed(0)} req/s, non-2xx ${result.non2xx + result.errors}; ` +
          `${(bytes / seconds / 2 ** 20).toFixed(2)} MiB/s allocated in all); load ${load()}`
      )
    }
  } finally {
    await target.server.stop()
    await database.drop()
  }
}

await main()
