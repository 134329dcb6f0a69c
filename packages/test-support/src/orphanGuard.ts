import { type ChildProcess, spawn } from "node:child_process"
import type { Socket } from "node:net"

/** What a test set up outside its own process, and how the guard undoes it. */
export type GuardedResource =
  /** Every process in it is killed, then it is deleted. */
  | { readonly kind: "namespace"; readonly name: string }
  | { readonly kind: "link"; readonly name: string }
  /** Killed if its command line still contains `commandLineIncludes` (so a reused pid is left alone). */
  | { readonly kind: "process"; readonly pid: number; readonly commandLineIncludes: string }
  /** `pg_ctl stop -m immediate`, as the `postgres` OS user. */
  | { readonly kind: "postgres"; readonly pgCtl: string; readonly dataDir: string }
  | { readonly kind: "directory"; readonly path: string }

/**
 * The guard: a detached process that reads resources on its stdin and, when
 * that closes without each of them forgotten, undoes the rest, last first. The
 * stdin closes when the test's process ends in any way, SIGKILL included, so
 * an interrupted run (Ctrl-C, a CI timeout) still leaves nothing behind; an
 * `exit` handler could not do that.
 */
const GUARD_SCRIPT = String.raw`
const { spawnSync } = require("node:child_process")
const { readFileSync, rmSync } = require("node:fs")
const live = new Map()
let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
    const message = JSON.parse(buffer.slice(0, at))
    buffer = buffer.slice(at + 1)
    if ("add" in message) live.set(message.add, message.resource)
    else live.delete(message.forget)
  }
})
const kill = (pid) => { try { process.kill(pid, "SIGKILL") } catch {} }
const undo = (resource) => {
  switch (resource.kind) {
    case "namespace": {
      const pids = spawnSync("ip", ["netns", "pids", resource.name], { encoding: "utf8" }).stdout || ""
      for (const pid of pids.split(/\s+/).filter(Boolean)) kill(Number(pid))
      spawnSync("ip", ["netns", "delete", resource.name])
      break
    }
    case "link":
      spawnSync("ip", ["link", "delete", resource.name])
      break
    case "process":
      if (readFileSync("/proc/" + resource.pid + "/cmdline", "utf8").includes(resource.commandLineIncludes)) kill(resource.pid)
      break
    case "postgres":
      spawnSync("runuser", ["-u", "postgres", "--", resource.pgCtl, "-D", resource.dataDir, "-m", "immediate", "-w", "stop"])
      break
    case "directory":
      rmSync(resource.path, { recursive: true, force: true })
      break
  }
}
process.stdin.on("end", () => {
  for (const resource of [...live.values()].reverse()) {
    try { undo(resource) } catch {}
  }
  process.exit(0)
})
`

let guard: { readonly child: ChildProcess; next: number } | undefined

const startGuard = () => {
  const child = spawn(process.execPath, ["-e", GUARD_SCRIPT], { detached: true, stdio: ["pipe", "ignore", "ignore"] })
  // Neither the guard nor the pipe to it keeps this process alive.
  child.unref()
  ;(child.stdin as Socket).unref()
  child.stdin!.on("error", () => undefined)
  return { child, next: 0 }
}

/**
 * Has the guard undo `resource` should this process end before it does; call
 * the returned function once the resource is gone.
 */
export const guardResource = (resource: GuardedResource): () => void => {
  const current = guard ??= startGuard()
  const id = current.next++
  const send = (message: object) => current.child.stdin!.write(`${JSON.stringify(message)}\n`)
  send({ add: id, resource })
  return () => send({ forget: id })
}
