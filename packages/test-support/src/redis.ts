import { type ChildProcess, execFile, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { guardResource } from "./orphanGuard.ts"
import { inNamespace } from "./testNetwork.ts"
import { findToolBinaries } from "./tools.ts"

const run = promisify(execFile)

/** Debian's `redis-server` and `redis-cli` (or `REDIS_SERVER`/`REDIS_CLI`); undefined when missing. */
export const redisBinaries = (): { readonly server: string; readonly cli: string } | undefined => {
  const server = findToolBinaries({ command: "redis-server", envVar: "REDIS_SERVER" })[0]
  const cli = findToolBinaries({ command: "redis-cli", envVar: "REDIS_CLI" })[0]
  return server === undefined || cli === undefined ? undefined : { server, cli }
}

const listens = (port: number, host: string) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer().once("error", () => resolve(false)).listen(port, host, () => {
      probe.close(() => resolve(true))
    })
  })

/**
 * A free port whose cluster bus port (port + 10000) is free too, below the ephemeral range so the bus port
 * exists; never 6379 or its bus, where the machine's own Redis may be. In a namespace of the test's own only
 * `taken` can hold a port.
 */
const freeRedisPort = async (taken: Set<number>, host: string, inOwnNamespace: boolean): Promise<number> => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (taken.has(port) || taken.has(port + 10_000)) continue
    if (inOwnNamespace || (await listens(port, host) && await listens(port + 10_000, host))) {
      taken.add(port)
      return port
    }
  }
  throw new Error("no free port pair for redis-server")
}

export interface RedisNode {
  readonly port: number
  /** SIGKILLs it: what a crashed host looks like. */
  readonly kill: () => Promise<void>
  /** Starts it again on the same port and directory (a Cluster node keeps its identity: `nodes.conf`). */
  readonly restart: () => Promise<void>
  /** Runs `redis-cli` against it; returns its output. */
  readonly cli: (...args: ReadonlyArray<string>) => Promise<string>
}

export interface TestRedis {
  /** `redis://127.0.0.1:port` (`rediss://` with TLS), comma-separated for a Cluster: REDIS_URL's value. */
  readonly url: string
  readonly nodes: ReadonlyArray<RedisNode>
  readonly stop: () => Promise<void>
}

/** TLS only (`--port 0`): the server's certificate and key, and the CA it trusts for client certificates. */
export interface TestRedisTls {
  readonly certFile: string
  readonly keyFile: string
  readonly caFile: string
  /** `tls-auth-clients`: `yes` (Redis's default) asks every client for a certificate; `no` by default here. */
  readonly authClients?: "yes" | "no" | "optional"
}

interface NodeOptions {
  readonly binaries: { readonly server: string; readonly cli: string }
  readonly dir: string
  readonly address: string
  readonly port: number
  readonly namespace: string | undefined
  readonly extra: ReadonlyArray<string>
  readonly password: string | undefined
  readonly tls: TestRedisTls | undefined
}

/** `redis-cli`'s options to reach a node as the test's own client: TLS with the node's CA and certificate. */
const cliTls = (tls: TestRedisTls | undefined) =>
  tls === undefined ? [] : ["--tls", "--cacert", tls.caFile, "--cert", tls.certFile, "--key", tls.keyFile]

const startNode = async (
  options: NodeOptions
): Promise<RedisNode & { readonly stop: () => Promise<void> }> => {
  const { address, binaries, port, tls } = options
  let child: ChildProcess | undefined
  let forget = () => {}
  let output = ""
  const cli = async (...args: ReadonlyArray<string>) =>
    (await run(binaries.cli, ["-h", address, "-p", String(port), ...cliTls(tls), ...args], {
      timeout: 10_000,
      env: { ...process.env, ...(options.password === undefined ? {} : { REDISCLI_AUTH: options.password }) }
    })).stdout
  const start = async () => {
    output = ""
    // No persistence: a test's Redis holds only what the test wrote, and a killed one comes back empty or from its replica.
    const args = [
      ...(tls === undefined ? ["--port", String(port)] : [
        "--port",
        "0",
        "--tls-port",
        String(port),
        "--tls-cert-file",
        tls.certFile,
        "--tls-key-file",
        tls.keyFile,
        "--tls-ca-cert-file",
        tls.caFile,
        "--tls-auth-clients",
        tls.authClients ?? "no"
      ]),
      "--bind",
      address,
      "--dir",
      options.dir,
      "--save",
      "",
      "--appendonly",
      "no",
      // Without a password Redis answers only loopback (protected mode); a test network's hosts are not that.
      ...(options.password === undefined ? ["--protected-mode", "no"] : ["--requirepass", options.password]),
      ...options.extra
    ]
    const [command, argv] = options.namespace === undefined
      ? [binaries.server, args]
      : inNamespace(options.namespace, binaries.server, args)
    // `ip netns exec` execs redis-server: the child's pid is the server's.
    child = spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    forget = child.pid === undefined
      ? () => {}
      : guardResource({ kind: "process", pid: child.pid, commandLineIncludes: `${address}:${port}` })
    const deadline = Date.now() + 30_000
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited (${child.exitCode}):\n${output}`)
      if ((await cli("ping").catch(() => "")).trim() === "PONG") return
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer within 30 s:\n${output}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  const kill = async () => {
    const current = child
    if (current === undefined || current.exitCode !== null || current.signalCode !== null) return
    const exited = once(current, "exit")
    current.kill("SIGKILL")
    await exited
    forget()
  }
  await start()
  return { port, cli, kill, restart: start, stop: kill }
}

/**
 * Real `redis-server` processes on free ports, in a temporary directory: one server, or a Cluster of 3
 * primaries each with 1 replica (`redis-cli --cluster create`). On loopback, or on a test network's member
 * (`address` in `namespace`: a machine of its own that the network's hosts reach). Each is killed if the
 * test's process dies (./orphanGuard.ts); `stop` kills them and removes the directory.
 */
export const startRedis = async (
  options: {
    readonly cluster?: boolean
    /** The `default` user's password (`requirepass`, `masterauth` in a Cluster); `url` then carries it. */
    readonly password?: string
    /** Where it listens; 127.0.0.1 unless given. */
    readonly address?: string
    /** The network namespace to run it in (with `address`, the namespace's own). */
    readonly namespace?: string
    readonly tls?: TestRedisTls
  } = {}
): Promise<TestRedis> => {
  const binaries = redisBinaries()
  if (binaries === undefined) throw new Error("no redis-server/redis-cli: apt-get install redis-server")
  const address = options.address ?? "127.0.0.1"
  const dir = mkdtempSync(join(tmpdir(), "petstore-redis-"))
  const forgetDir = guardResource({ kind: "directory", path: dir })
  const taken = new Set<number>()
  const nodes: Array<Awaited<ReturnType<typeof startNode>>> = []
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()))
    rmSync(dir, { recursive: true, force: true })
    forgetDir()
  }
  try {
    const count = options.cluster ? 6 : 1
    const ports: Array<number> = []
    for (let i = 0; i < count; i++) ports.push(await freeRedisPort(taken, address, options.namespace !== undefined))
    for (const port of ports) {
      const nodeDir = mkdtempSync(join(dir, `${port}-`))
      nodes.push(
        await startNode({
          binaries,
          dir: nodeDir,
          address,
          port,
          namespace: options.namespace,
          extra: options.cluster
            ? [
              "--cluster-enabled",
              "yes",
              "--cluster-config-file",
              "nodes.conf",
              // Failover within seconds, and a Cluster that keeps serving the slots it still has.
              "--cluster-node-timeout",
              "2000",
              "--cluster-require-full-coverage",
              "no",
              // A replica must log in to its primary as any client does.
              ...(options.password === undefined ? [] : ["--masterauth", options.password]),
              // The Cluster's bus and its replication over TLS too; nodes announce their TLS port.
              ...(options.tls === undefined ? [] : ["--tls-cluster", "yes", "--tls-replication", "yes"])
            ]
            : [],
          password: options.password,
          tls: options.tls
        })
      )
    }
    if (options.cluster) {
      await run(binaries.cli, [
        "--cluster",
        "create",
        ...ports.map((port) => `${address}:${port}`),
        "--cluster-replicas",
        "1",
        "--cluster-yes",
        ...cliTls(options.tls)
      ], {
        timeout: 60_000,
        env: { ...process.env, ...(options.password === undefined ? {} : { REDISCLI_AUTH: options.password }) }
      })
      await waitForClusterOk(nodes)
    }
    const scheme = options.tls === undefined ? "redis" : "rediss"
    const credentials = options.password === undefined ? "" : `:${encodeURIComponent(options.password)}@`
    return { url: ports.map((port) => `${scheme}://${credentials}${address}:${port}`).join(","), nodes, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** Every node sees every slot served, and every replica is in sync with its primary. */
export const waitForClusterOk = async (nodes: ReadonlyArray<RedisNode>, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const states = await Promise.all(nodes.map((node) => node.cli("cluster", "info").catch(() => "")))
    const replication = await Promise.all(nodes.map((node) => node.cli("info", "replication").catch(() => "")))
    const ok = states.every((info) => info.includes("cluster_state:ok")) &&
      replication.every((info) => !info.includes("role:slave") || info.includes("master_link_status:up"))
    if (ok) return
    if (Date.now() > deadline) {
      throw new Error(`the Redis Cluster is not ok after ${timeoutMs} ms:\n${states.join("\n")}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
