import { execFile, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { promisify } from "node:util"
import { guardResource } from "./orphanGuard.ts"

const run = promisify(execFile)

/** `ip …` (iproute2); throws with its stderr when it fails. */
export const ip = async (...args: ReadonlyArray<string>): Promise<string> => {
  try {
    return (await run("ip", [...args], { encoding: "utf8" })).stdout
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? ""
    throw new Error(`ip ${args.join(" ")}: ${stderr.trim() || String(error)}`)
  }
}

export interface NetworkMember {
  /** The network namespace, to run processes in with `inNamespace`. */
  readonly namespace: string
  /** Its address on the test network. */
  readonly address: string
}

/**
 * Network namespaces on one bridge, as if they were machines on one LAN. The
 * bridge lives in the root namespace with `gateway` as its address, so
 * processes there (a load balancer, the test itself) reach every member, and
 * members reach each other; nothing is routed anywhere else.
 */
export interface TestNetwork {
  readonly id: string
  readonly subnet: string
  readonly gateway: string
  readonly members: Readonly<Record<string, NetworkMember>>
  /** Kills every process left in the namespaces, then removes them and the bridge. Safe to call twice. */
  readonly destroy: () => Promise<void>
}

/** The prefix of every namespace made here: `petfleet-<pid of the creator>-<id>-<member>`. */
const NAMESPACE_PREFIX = "petfleet-"
/** Interface names are limited to 15 bytes: `pfb<id>` for the bridge, `pfv<id><n>` for the root end of a veth. */
const bridgeName = (id: string) => `pfb${id}`
const vethName = (id: string, index: number) => `pfv${id}${index.toString(36)}`

/** A /24 under 10.231.0.0/16 that no route on this machine uses yet. */
const pickSubnet = async (): Promise<number> => {
  const routes = await ip("-4", "route", "show", "table", "all")
  const used = new Set([...routes.matchAll(/\b10\.231\.(\d+)\./g)].map((match) => Number(match[1])))
  const free = Array.from({ length: 254 }, (_, i) => i + 1).filter((third) => !used.has(third))
  if (free.length === 0) throw new Error("every 10.231.x.0/24 is in use on this machine")
  return free[Math.floor(Math.random() * free.length)]!
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const namespacesOf = (listing: string) =>
  listing.split("\n").map((line) => line.split(" ")[0] ?? "").filter((name) => name !== "")

const pidsIn = (namespace: string): Array<number> => {
  const listed = spawnSync("ip", ["netns", "pids", namespace], { encoding: "utf8" })
  return (listed.stdout ?? "").split(/\s+/).filter((pid) => pid !== "").map(Number)
}

/** Synchronous, so it also runs from an `exit` handler: the test's own processes, namespaces and bridge. */
const destroySync = (id: string, namespaces: ReadonlyArray<string>) => {
  for (const namespace of namespaces) {
    for (const pid of pidsIn(namespace)) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
    spawnSync("ip", ["netns", "delete", namespace], { stdio: "ignore" })
  }
  spawnSync("ip", ["link", "delete", bridgeName(id)], { stdio: "ignore" })
}

/**
 * Removes what runs of this helper left behind when their process was killed
 * before it could clean up (the creator's pid is in every namespace's name).
 * Networks of live processes, e.g. a concurrent run, are left alone.
 */
export const sweepAbandonedTestNetworks = async () => {
  const byNetwork = new Map<string, Array<string>>()
  for (const namespace of namespacesOf(await ip("netns", "list"))) {
    const match = /^petfleet-(\d+)-([0-9a-f]{6})-/.exec(namespace)
    if (match === null || isAlive(Number(match[1]))) continue
    byNetwork.set(match[2]!, [...(byNetwork.get(match[2]!) ?? []), namespace])
  }
  for (const [id, namespaces] of byNetwork) destroySync(id, namespaces)
}

/**
 * Creates one namespace per name in `members`, each with a veth to a new
 * bridge, addressed in a /24 of 10.231.0.0/16 that this machine does not use.
 * Everything is named with a random id and removed by `destroy`, or at the
 * latest when this process ends, however it ends (./orphanGuard.ts).
 */
export const createTestNetwork = async (members: ReadonlyArray<string>): Promise<TestNetwork> => {
  await sweepAbandonedTestNetworks()
  const id = randomBytes(3).toString("hex")
  const third = await pickSubnet()
  const subnet = `10.231.${third}.0/24`
  const gateway = `10.231.${third}.1`
  const namespaces: Array<string> = []
  const forget: Array<() => void> = []
  let destroyed = false
  const onExit = () => destroySync(id, namespaces)
  process.once("exit", onExit)
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    process.off("exit", onExit)
    destroySync(id, namespaces)
    for (const done of forget) done()
  }
  try {
    const bridge = bridgeName(id)
    forget.push(guardResource({ kind: "link", name: bridge }))
    await ip("link", "add", bridge, "type", "bridge")
    await ip("address", "add", `${gateway}/24`, "dev", bridge)
    await ip("link", "set", bridge, "up")
    const entries: Array<[string, NetworkMember]> = []
    for (const [index, member] of members.entries()) {
      const namespace = `${NAMESPACE_PREFIX}${process.pid}-${id}-${member}`
      const address = `10.231.${third}.${index + 10}`
      forget.push(guardResource({ kind: "namespace", name: namespace }))
      await ip("netns", "add", namespace)
      namespaces.push(namespace)
      const outside = vethName(id, index)
      await ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", namespace)
      await ip("link", "set", outside, "master", bridge, "up")
      await ip("-n", namespace, "address", "add", `${address}/24`, "dev", "eth0")
      await ip("-n", namespace, "link", "set", "eth0", "up")
      await ip("-n", namespace, "link", "set", "lo", "up")
      entries.push([member, { namespace, address }])
    }
    return { id, subnet, gateway, members: Object.fromEntries(entries), destroy }
  } catch (error) {
    await destroy()
    throw error
  }
}

/** The command line that runs `command` inside a namespace: `ip netns exec` execs it, so the pid is the command's. */
export const inNamespace = (
  namespace: string,
  command: string,
  args: ReadonlyArray<string>
): [string, Array<string>] => [
  "ip",
  ["netns", "exec", namespace, command, ...args]
]
