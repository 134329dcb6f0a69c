/**
 * A fleet on this machine: server hosts, each in a network namespace of its
 * own, behind HAProxy (running `fleet/haproxy.cfg`, docs/fleet.md's reference
 * configuration), on a PostgreSQL cluster that the fleet starts in a namespace
 * of its own, and, if asked, with quotas on a Redis Cluster (3 primaries, 3
 * replicas) in another. One host may run with its clock behind the others
 * (libfaketime). Needs root (namespaces, veths), iproute2, HAProxy,
 * PostgreSQL's binaries and libfaketime (and redis-server for the Redis
 * Cluster); every piece is removed by `destroy`, and at the latest when the
 * process exits.
 */
import {
  ADMIN_TOKEN,
  createKey,
  type CreatedTestKey,
  createTestNetwork,
  freePort,
  guardResource,
  type Haproxy,
  type HaproxyServerStat,
  type PostgresCluster,
  redisBinaries,
  startHaproxy,
  startPostgresCluster,
  startRedis,
  type TestNetwork,
  type TestRedis
} from "@petstore/test-support"
import { type KeyUsage, makeAdminClient, type Plan, type QuotaLimits } from "@petstore/contract"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import postgres from "postgres"

/** The file docs/fleet.md documents; the fleet runs this one, so the two cannot drift apart. */
export const haproxyConfigFile = fileURLToPath(new URL("../haproxy.cfg", import.meta.url))

/** The server as `pnpm build` leaves it (what `pnpm start` runs). */
export const serverMain = fileURLToPath(new URL("../node_modules/@petstore/server/dist/main.js", import.meta.url))

const PUBLIC_PORT = 8080
const ADMIN_PORT = 8081
export const HOST_NAMES = ["host1", "host2", "host3"] as const
export type HostName = (typeof HOST_NAMES)[number]

/** libfaketime for multi-threaded programs (Node is one): Debian's `faketime` package. */
export const faketimeLibrary = (): string | undefined => {
  const fromEnv = process.env.FAKETIME_LIBRARY
  if (fromEnv !== undefined && existsSync(fromEnv)) return fromEnv
  const lib = "/usr/lib"
  return readdirSync(lib)
    .map((entry) => join(lib, entry, "faketime", "libfaketimeMT.so.1"))
    .find((path) => existsSync(path))
}

/** What the fleet needs from the machine; the first that is missing, as a sentence. */
export const missingPrerequisite = (): string | undefined => {
  if (process.getuid?.() !== 0) return "the fleet needs root (network namespaces, veth pairs)"
  const onPath = (command: string) =>
    (process.env.PATH ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, command)))
  if (!onPath("ip")) return "`ip` (Debian: iproute2) is not on PATH"
  if (!onPath("haproxy")) return "`haproxy` (Debian: haproxy) is not on PATH"
  if (!existsSync("/usr/lib/postgresql") && process.env.PG_BINDIR === undefined) {
    return "no PostgreSQL binaries under /usr/lib/postgresql (Debian: postgresql-15) and no PG_BINDIR"
  }
  if (faketimeLibrary() === undefined) return "libfaketime (Debian: faketime) is not installed"
  if (!existsSync(serverMain)) return `the server is not built (${serverMain}): run pnpm build`
  return undefined
}

/** What a fleet with quotas on a Redis Cluster needs besides. */
export const missingRedis = (): string | undefined =>
  redisBinaries() === undefined ? "no redis-server/redis-cli (Debian: redis-server)" : undefined

export interface HostExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface FleetHost {
  readonly name: HostName
  readonly address: string
  readonly port: number
  /** The host's public listener, reached directly (not through the balancer). */
  readonly origin: string
  readonly admin: string
  /** How far this host's clock is from the machine's, in seconds (negative: behind). */
  readonly clockOffsetSeconds: number
  readonly running: () => boolean
  readonly pid: () => number | undefined
  readonly output: () => string
  /** Starts the server and waits until its own /readyz answers 200. */
  readonly start: () => Promise<void>
  /** Sends `signal` and waits for the process to exit. */
  readonly stop: (signal: "SIGTERM" | "SIGKILL") => Promise<HostExit>
}

export interface FleetOptions {
  /** The host whose clock runs behind, and by how much (libfaketime's offset, e.g. "-1.8s"). */
  readonly skew?: { readonly host: HostName; readonly offset: string; readonly seconds: number }
  /** SHUTDOWN_DRAIN_SECONDS of every host. */
  readonly drainSeconds?: number
  /** Extra environment of every host. */
  readonly hostEnv?: Record<string, string>
  /** Quotas on a Redis Cluster of the fleet's own (QUOTA_STORE=redis, REDIS_TYPE=cluster), not on PostgreSQL. */
  readonly redisCluster?: boolean
}

export interface Fleet {
  /** Where clients connect: HAProxy, on loopback. */
  readonly origin: string
  readonly hosts: Readonly<Record<HostName, FleetHost>>
  readonly haproxy: Haproxy
  readonly postgres: PostgresCluster
  /** The quota store's Redis Cluster, with `redisCluster`. */
  readonly redis: TestRedis | undefined
  /** A client of the fleet's database, for checking what was stored. */
  readonly sql: postgres.Sql
  readonly network: TestNetwork
  /** A new API key, through the admin API of the first running host. */
  readonly createKey: (plan: Plan, limits?: QuotaLimits) => Promise<CreatedTestKey>
  /** A key's windows as the admin API reports them (from the database, shared by every host). */
  readonly usage: (keyId: string) => Promise<KeyUsage>
  /** The balancer's view of each host (`show stat`). */
  readonly servers: () => Promise<Readonly<Record<HostName, HaproxyServerStat>>>
  /**
   * Waits, within `timeoutMs`, until the balancer sees each named host in the
   * given state; resolves with whether it did.
   */
  readonly balancerSees: (
    states: Partial<Record<HostName, "UP" | "DOWN" | "MAINT">>,
    timeoutMs: number
  ) => Promise<boolean>
  readonly destroy: () => Promise<void>
}

const DATABASE = "petstore"
const OUTPUT_KEPT = 20_000

const waitUntil = async (check: () => Promise<boolean>, timeoutMs: number, intervalMs: number) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

const makeHost = (
  name: HostName,
  namespace: string,
  address: string,
  env: Record<string, string>,
  clockOffsetSeconds: number
): FleetHost => {
  const origin = `http://${address}:${PUBLIC_PORT}`
  let child: ChildProcess | undefined
  let output = ""
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null
  const exited = (server: ChildProcess) =>
    new Promise<HostExit>((resolve) => {
      if (server.exitCode !== null || server.signalCode !== null) {
        return resolve({ code: server.exitCode, signal: server.signalCode })
      }
      server.once("exit", (code, signal) => resolve({ code, signal }))
    })
  const start = async () => {
    if (running()) throw new Error(`${name} is already running`)
    // `ip netns exec` execs the command: the child's pid is the server's, and signals reach it.
    const started = spawn("ip", ["netns", "exec", namespace, process.execPath, serverMain], {
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    child = started
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_KEPT))
    started.stdout!.on("data", keep)
    started.stderr!.on("data", keep)
    const ready = await waitUntil(
      async () => {
        if (started.exitCode !== null || started.signalCode !== null) return true
        return fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)
      },
      60_000,
      100
    )
    if (!running()) {
      throw new Error(`${name} exited (${started.exitCode ?? started.signalCode}) before it was ready:\n${output}`)
    }
    if (!ready) throw new Error(`${name} was not ready within 60 s:\n${output}`)
  }
  const stop = async (signal: "SIGTERM" | "SIGKILL") => {
    const current = child
    if (current === undefined) throw new Error(`${name} was never started`)
    const exit = exited(current)
    current.kill(signal)
    // Bounded: the drain, then requests in flight (at most 30 s), then the pool's close (5 s).
    const timer = setTimeout(() => current.kill("SIGKILL"), 60_000)
    const result = await exit
    clearTimeout(timer)
    return result
  }
  return {
    name,
    address,
    port: PUBLIC_PORT,
    origin,
    admin: `http://${address}:${ADMIN_PORT}`,
    clockOffsetSeconds,
    running,
    pid: () => (running() ? child?.pid : undefined),
    output: () => output,
    start,
    stop
  }
}

/** Starts the fleet: network, database, three hosts, the balancer; resolves once the balancer sees every host UP. */
export const startFleet = async (options: FleetOptions = {}): Promise<Fleet> => {
  const cleanup: Array<() => Promise<void>> = []
  const destroy = async () => {
    for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined)
  }
  try {
    const network = await createTestNetwork(["db", ...HOST_NAMES, ...(options.redisCluster ? ["redis"] : [])])
    cleanup.push(() => network.destroy())
    // Its nodes listen on the namespace's address and announce it: the hosts follow MOVED and failovers there.
    const redis = options.redisCluster
      ? await startRedis({
        cluster: true,
        // As a Redis reached over a network is run: with a password, which the hosts' REDIS_URL carries.
        password: randomBytes(12).toString("hex"),
        address: network.members.redis!.address,
        namespace: network.members.redis!.namespace
      })
      : undefined
    if (redis !== undefined) cleanup.push(() => redis.stop())
    const db = network.members.db!
    const cluster = await startPostgresCluster({ address: db.address, allow: network.subnet, namespace: db.namespace })
    cleanup.push(() => cluster.destroy())
    const admin = postgres(cluster.url("postgres"), { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE ${DATABASE}`)
    await admin.end()
    const sql = postgres(cluster.url(DATABASE), { max: 2, onnotice: () => {}, connect_timeout: 5 })
    cleanup.push(() => sql.end({ timeout: 1 }))

    const faketime = faketimeLibrary()
    const hosts = Object.fromEntries(HOST_NAMES.map((name) => {
      const member = network.members[name]!
      const skewed = options.skew?.host === name
      if (skewed && faketime === undefined) throw new Error("libfaketime is not installed (Debian: faketime)")
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "",
        HOST: "0.0.0.0",
        PORT: String(PUBLIC_PORT),
        ADMIN_HOST: member.address,
        ADMIN_PORT: String(ADMIN_PORT),
        ADMIN_TOKEN,
        DATABASE_URL: cluster.url(DATABASE),
        TRUST_PROXY: "1",
        LOG_LEVEL: "Warn",
        SHUTDOWN_DRAIN_SECONDS: String(options.drainSeconds ?? 3),
        ...(redis === undefined ? {} : {
          QUOTA_STORE: "redis",
          REDIS_TYPE: "cluster",
          REDIS_URL: redis.url,
          // 300 requests at once on a busy machine queue in the hosts themselves: the fleet asks for exactness,
          // not speed (a late answer is a 503 under the default 250 ms; PostgreSQL's statements wait 5 s).
          QUOTA_STORE_TIMEOUT: "10000"
        }),
        ...options.hostEnv,
        ...(skewed
          ? {
            LD_PRELOAD: faketime!,
            FAKETIME: options.skew!.offset,
            // Only the wall clock is behind, as with a host whose NTP is off; timers keep real time.
            FAKETIME_DONT_FAKE_MONOTONIC: "1"
          }
          : {})
      }
      return [name, makeHost(name, member.namespace, member.address, env, skewed ? options.skew!.seconds : 0)]
    })) as Record<HostName, FleetHost>
    cleanup.push(async () => {
      await Promise.all(Object.values(hosts).filter((host) => host.running()).map((host) => host.stop("SIGKILL")))
    })
    await Promise.all(Object.values(hosts).map((host) => host.start()))

    const runtimeDir = mkdtempSync(join(tmpdir(), "petstore-haproxy-"))
    const forgetRuntimeDir = guardResource({ kind: "directory", path: runtimeDir })
    cleanup.push(async () => {
      rmSync(runtimeDir, { recursive: true, force: true })
      forgetRuntimeDir()
    })
    const lbPort = await freePort()
    const haproxy = await startHaproxy({
      configFile: haproxyConfigFile,
      runtimeSocket: join(runtimeDir, "admin.sock"),
      env: {
        PETSTORE_LISTEN: `127.0.0.1:${lbPort}`,
        HAPROXY_RUNTIME_SOCKET: join(runtimeDir, "admin.sock"),
        ...Object.fromEntries(
          HOST_NAMES.map((name, i) => [`PETSTORE_HOST${i + 1}`, `${hosts[name].address}:${PUBLIC_PORT}`])
        )
      }
    })
    cleanup.push(() => haproxy.stop())

    const servers = async () => {
      const stats = await haproxy.servers()
      return Object.fromEntries(
        stats.filter((stat) => stat.backend === "petstore").map((stat) => [stat.server, stat])
      ) as Record<HostName, HaproxyServerStat>
    }
    const balancerSees: Fleet["balancerSees"] = (states, timeoutMs) =>
      waitUntil(
        async () => {
          const now = await servers()
          return Object.entries(states).every(([name, state]) => now[name as HostName]?.status === state)
        },
        timeoutMs,
        50
      )
    if (!(await balancerSees({ host1: "UP", host2: "UP", host3: "UP" }, 30_000))) {
      throw new Error(
        `the balancer did not see every host UP within 30 s: ${JSON.stringify(await servers())}\n${haproxy.output()}`
      )
    }
    const runningHost = () => {
      const host = Object.values(hosts).find((candidate) => candidate.running())
      if (host === undefined) throw new Error("no host is running")
      return host
    }
    return {
      origin: `http://127.0.0.1:${lbPort}`,
      hosts,
      haproxy,
      postgres: cluster,
      redis,
      sql,
      network,
      createKey: (plan, limits) => createKey(runningHost().admin, plan, limits),
      usage: (keyId) =>
        makeAdminClient({ baseUrl: runningHost().admin, adminToken: ADMIN_TOKEN }).pipe(
          Effect.flatMap((client) => client.keys.keyUsage({ params: { id: keyId } })),
          Effect.provide(FetchHttpClient.layer),
          Effect.runPromise
        ),
      servers,
      balancerSees,
      destroy
    }
  } catch (error) {
    await destroy()
    throw error
  }
}

/** The balancer's health-check schedule, read from the configuration file the fleet runs. */
export const healthCheckSchedule = (configText: string) => {
  const duration = (text: string) => {
    const match = /^(\d+)(ms|s)?$/.exec(text)
    if (match === null) throw new Error(`not a duration in ${haproxyConfigFile}: ${text}`)
    return Number(match[1]) * (match[2] === "ms" ? 1 : 1_000)
  }
  const line = configText.split("\n").find((entry) => /^\s*default-server\b/.test(entry))
  const timeoutCheck = /^\s*timeout check (\S+)/m.exec(configText)?.[1]
  if (line === undefined || timeoutCheck === undefined) {
    throw new Error(`no default-server line or timeout check in ${haproxyConfigFile}`)
  }
  const option = (name: string) => {
    const value = new RegExp(`\\b${name} (\\S+)`).exec(line)?.[1]
    if (value === undefined) throw new Error(`default-server in ${haproxyConfigFile} sets no ${name}`)
    return value
  }
  return {
    interMs: duration(option("inter")),
    fastinterMs: duration(option("fastinter")),
    fall: Number(option("fall")),
    rise: Number(option("rise")),
    timeoutCheckMs: duration(timeoutCheck)
  }
}
