/**
 * `pnpm bench:fleet` (root): throughput of one, two and three hosts through the
 * balancer, on the fleet the fleet test runs (./fleet.ts), and where the CPU
 * goes meanwhile: the hosts, PostgreSQL, HAProxy, the load generator. Writes
 * the fleet section of bench/RESULTS.md (between its markers; the rest of the
 * file, `pnpm bench`'s, is left as it is).
 *
 * Environment: BENCH_FLEET_ROUNDS (2), BENCH_FLEET_SECONDS (8).
 */
import autocannon from "autocannon"
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { fileURLToPath } from "node:url"
import { type Fleet, HOST_NAMES, missingPrerequisite, startFleet } from "./fleet.ts"

const rounds = Number(process.env.BENCH_FLEET_ROUNDS ?? 2)
const seconds = Number(process.env.BENCH_FLEET_SECONDS ?? 8)
const CONNECTIONS = 64
const resultsFile = fileURLToPath(new URL("../../bench/RESULTS.md", import.meta.url))
const BEGIN = "<!-- fleet: written by pnpm bench:fleet; the text after the end marker is kept -->"
const END = "<!-- /fleet -->"

type Endpoint = "list" | "create"
const endpoints: ReadonlyArray<Endpoint> = ["list", "create"]

const CLOCK_TICKS_PER_SECOND = 100
/** CPU seconds (user + system) of a process so far; 0 once it is gone. */
const cpuOf = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
  } catch {
    return 0
  }
}
const pidsInNamespace = (namespace: string) =>
  execFileSync("ip", ["netns", "pids", namespace], { encoding: "utf8" }).split(/\s+/).filter(Boolean).map(Number)

interface Sample {
  readonly hosts: number
  readonly postgres: number
  readonly haproxy: number
  readonly loadGenerator: number
  /** Every process on the machine, the fleet's and others' alike (/proc/stat: all but idle and iowait). */
  readonly machine: number
}

const machineBusySeconds = () => {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_SECOND
}

/** CPU seconds so far of each part of the fleet; PostgreSQL counts the postmaster and every backend. */
const sampleCpu = (fleet: Fleet): Sample => {
  const self = process.cpuUsage()
  return {
    hosts: HOST_NAMES.reduce(
      (sum, name) => sum + (fleet.hosts[name].pid() === undefined ? 0 : cpuOf(fleet.hosts[name].pid()!)),
      0
    ),
    postgres: pidsInNamespace(fleet.network.members.db!.namespace).reduce((sum, pid) => sum + cpuOf(pid), 0),
    haproxy: cpuOf(fleet.haproxy.child.pid!),
    loadGenerator: (self.user + self.system) / 1e6,
    machine: machineBusySeconds()
  }
}

interface Measure {
  readonly requests: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly seconds: number
  /** Cores busy on average, by part. */
  readonly cores: Sample
  readonly commitsPerRequest: number
  readonly walBytesPerRequest: number
}

const requestsFor = (endpoint: Endpoint, key: string): Array<autocannon.Request> => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  return endpoint === "list"
    ? [{ method: "GET", path: "/v1/pets?limit=20", headers }]
    : [{ method: "POST", path: "/v1/pets", headers, body: JSON.stringify({ name: "Bench", categoryId: 1 }) }]
}

const databaseCounters = async (fleet: Fleet) => {
  const [row] = await fleet.sql<Array<{ commits: string; wal: string }>>`
    SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits,
           (SELECT wal_bytes FROM pg_stat_wal)::text AS wal`
  return { commits: Number(row!.commits), wal: Number(row!.wal) }
}

const measure = async (fleet: Fleet, endpoint: Endpoint, key: string, duration: number): Promise<Measure> => {
  const cpuBefore = sampleCpu(fleet)
  const dbBefore = await databaseCounters(fleet)
  const startedAt = process.hrtime.bigint()
  const result = await autocannon({
    url: fleet.origin,
    connections: CONNECTIONS,
    duration,
    requests: requestsFor(endpoint, key)
  })
  const wall = Number(process.hrtime.bigint() - startedAt) / 1e9
  const cpuAfter = sampleCpu(fleet)
  const dbAfter = await databaseCounters(fleet)
  const requests = result.requests.total
  const cores = (pick: (sample: Sample) => number) => (pick(cpuAfter) - pick(cpuBefore)) / wall
  return {
    requests,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors + result.timeouts,
    seconds: wall,
    cores: {
      hosts: cores((s) => s.hosts),
      postgres: cores((s) => s.postgres),
      haproxy: cores((s) => s.haproxy),
      loadGenerator: cores((s) => s.loadGenerator),
      machine: cores((s) => s.machine)
    },
    // Minus the two statements of the counters' own query.
    commitsPerRequest: (dbAfter.commits - dbBefore.commits - 1) / requests,
    walBytesPerRequest: (dbAfter.wal - dbBefore.wal) / requests
  }
}

/** Hosts 1..count running and in rotation; the others stopped and in maintenance at the balancer. */
const useHosts = async (fleet: Fleet, count: number) => {
  for (const [index, name] of HOST_NAMES.entries()) {
    const host = fleet.hosts[name]
    if (index < count) {
      if (!host.running()) await host.start()
      await fleet.haproxy.command(`set server petstore/${name} state ready`)
    } else {
      await fleet.haproxy.command(`set server petstore/${name} state maint`)
      if (host.running()) await host.stop("SIGTERM")
    }
  }
  const wanted = Object.fromEntries(HOST_NAMES.map((name, index) => [name, index < count ? "UP" : "MAINT"] as const))
  if (!(await fleet.balancerSees(wanted, 30_000))) {
    throw new Error(`the balancer does not see ${JSON.stringify(wanted)}`)
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!
}

const combine = (measures: ReadonlyArray<Measure>) => {
  const of = (pick: (m: Measure) => number) => median(measures.map(pick))
  return {
    rps: of((m) => m.rps),
    p50: of((m) => m.p50),
    p99: of((m) => m.p99),
    errors: measures.reduce((sum, m) => sum + m.errors, 0),
    cores: {
      hosts: of((m) => m.cores.hosts),
      postgres: of((m) => m.cores.postgres),
      haproxy: of((m) => m.cores.haproxy),
      loadGenerator: of((m) => m.cores.loadGenerator),
      machine: of((m) => m.cores.machine)
    },
    requestsPerHostCpuSecond: of((m) => m.rps / m.cores.hosts),
    commitsPerRequest: of((m) => m.commitsPerRequest),
    walBytesPerRequest: of((m) => m.walBytesPerRequest),
    postgresCpuMsPerRequest: of((m) => (m.cores.postgres * m.seconds * 1_000) / m.requests)
  }
}

const main = async () => {
  const missing = missingPrerequisite()
  if (missing !== undefined) {
    console.error(`bench:fleet: ${missing}`)
    process.exit(1)
  }
  console.log("starting the fleet…")
  // The fleet as the fleet test runs it, host3's clock behind included; a short drain speeds up the host changes.
  const fleet = await startFleet({ skew: { host: "host3", offset: "-1.8s", seconds: -1.8 }, drainSeconds: 2 })
  try {
    await fleet.sql`INSERT INTO pets (name, category_id, status)
      SELECT 'Pet ' || g, 1 + g % 10, (ARRAY['available', 'pending', 'sold'])[1 + g % 3] FROM generate_series(1, 10000) AS g`
    const { key } = await fleet.createKey("enterprise", { perMinute: 2_000_000_000, perDay: 2_000_000_000 })
    const [{ version }] = await fleet.sql<
      Array<{ version: string }>
    >`SELECT current_setting('server_version') AS version` as unknown as [
      { version: string }
    ]
    const haproxyVersion = /version (\S+)/.exec(execFileSync("haproxy", ["-v"], { encoding: "utf8" }))?.[1] ?? "?"

    const results = new Map<string, Array<Measure>>()
    // Down and up again, so that every count of hosts is measured both after more and after fewer.
    const order = Array.from({ length: rounds }, (_, round) => (round % 2 === 0 ? [3, 2, 1] : [1, 2, 3])).flat()
    for (const [step, count] of order.entries()) {
      await useHosts(fleet, count)
      for (const endpoint of endpoints) {
        await measure(fleet, endpoint, key, 3)
        const m = await measure(fleet, endpoint, key, seconds)
        results.set(`${count} ${endpoint}`, [...(results.get(`${count} ${endpoint}`) ?? []), m])
        const c = m.cores
        console.log(
          `step ${step + 1}/${order.length}: ${count} host(s) ${endpoint.padEnd(6)} ${
            m.rps.toFixed(0).padStart(6)
          } req/s  ` +
            `p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors}  cores: hosts ${c.hosts.toFixed(2)} postgres ${
              c.postgres.toFixed(2)
            } ` +
            `haproxy ${c.haproxy.toFixed(2)} load ${c.loadGenerator.toFixed(2)} machine ${c.machine.toFixed(2)}`
        )
      }
    }

    const lines = [
      BEGIN,
      "",
      `Measured by \`pnpm bench:fleet\` on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${
        cpus()[0]?.model.trim()
      }), ` +
      `${
        (totalmem() / 2 ** 30).toFixed(0)
      } GiB; Node ${process.versions.node}, PostgreSQL ${version} (the fleet's own cluster), ` +
      `HAProxy ${haproxyVersion} with \`fleet/haproxy.cfg\`. Every host, PostgreSQL, HAProxy and the load generator ` +
      `(autocannon, ${CONNECTIONS} connections to HAProxy) run on this one machine. ${rounds} rounds of ${seconds} s per count ` +
      "of hosts and endpoint, each after a 3 s warm-up, in the order 3, 2, 1 hosts and back; medians over the rounds. The database holds 10,000 pets.",
      "",
      "Cores: CPU-seconds each part used per second of the run, read from /proc (PostgreSQL: the postmaster and every",
      "backend). \"fleet\" adds the four parts up; \"machine\" is every process on the machine, so the difference is what",
      "other work on the machine took meanwhile. req per host CPU-s divides req/s by the hosts' cores.",
      "",
      "| hosts | endpoint | req/s | vs 1 host | p50 ms | p99 ms | non-2xx | req per host CPU-s | cores: hosts | PostgreSQL | HAProxy | load generator | fleet | machine |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    ]
    for (const endpoint of endpoints) {
      const one = combine(results.get(`1 ${endpoint}`)!)
      for (const count of [1, 2, 3]) {
        const m = combine(results.get(`${count} ${endpoint}`)!)
        const c = m.cores
        const all = c.hosts + c.postgres + c.haproxy + c.loadGenerator
        lines.push(
          `| ${count} | ${endpoint} | ${m.rps.toFixed(0)} | ${
            (m.rps / one.rps).toFixed(2)
          }× | ${m.p50} | ${m.p99} | ${m.errors} | ` +
            `${m.requestsPerHostCpuSecond.toFixed(0)} | ${c.hosts.toFixed(2)} | ${c.postgres.toFixed(2)} | ${
              c.haproxy.toFixed(2)
            } | ` +
            `${c.loadGenerator.toFixed(2)} | ${all.toFixed(2)} | ${c.machine.toFixed(2)} |`
        )
      }
    }
    lines.push(
      "",
      "PostgreSQL's work per request:",
      "",
      "| hosts | endpoint | commits per request | WAL bytes per request | PostgreSQL CPU ms per request |",
      "| --- | --- | --- | --- | --- |"
    )
    for (const endpoint of endpoints) {
      for (const count of [1, 2, 3]) {
        const m = combine(results.get(`${count} ${endpoint}`)!)
        lines.push(
          `| ${count} | ${endpoint} | ${m.commitsPerRequest.toFixed(2)} | ${m.walBytesPerRequest.toFixed(0)} | ${
            m.postgresCpuMsPerRequest.toFixed(3)
          } |`
        )
      }
    }
    lines.push("", END)
    writeResults(lines.join("\n"))
    console.log(`wrote the fleet section of ${resultsFile}`)
  } finally {
    await fleet.destroy()
  }
}

/** Replaces the section between the markers, or appends one at the end of the file (after `pnpm bench`'s kept analysis). */
const writeResults = (section: string) => {
  const previous = readFileSync(resultsFile, "utf8")
  const begin = previous.indexOf(BEGIN)
  const end = previous.indexOf(END)
  const next = begin !== -1 && end > begin
    ? previous.slice(0, begin) + section + previous.slice(end + END.length)
    : `${previous.trimEnd()}\n\n## Fleet: one, two and three hosts through HAProxy\n\n${section}\n`
  writeFileSync(resultsFile, next)
}

await main()
