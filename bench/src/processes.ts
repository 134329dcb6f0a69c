import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { readFileSync } from "node:fs"
import { createServer } from "node:net"

const CLOCK_TICKS_PER_SECOND = 100

/** CPU seconds (user + system) a process and its children (e.g. cluster workers) have used so far. */
export const cpuSeconds = (pid: number): number => {
  const own = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  // Fields 14–15 of /proc/<pid>/stat (utime, stime), counted from after the command name.
  const ticks = Number(own[11]) + Number(own[12])
  const children = childPids(pid).reduce((sum, child) => sum + cpuSeconds(child), 0)
  return ticks / CLOCK_TICKS_PER_SECOND + children
}

/** Resident memory of a process and its children, in MiB. */
export const rssMiB = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kib / 1024 + childPids(pid).reduce((sum, child) => sum + rssMiB(child), 0)
}

const childPids = (pid: number): Array<number> => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

export const freePort = async () => {
  const probe = createServer().listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as { port: number }
  probe.close()
  await once(probe, "close")
  return port
}

export interface Started {
  readonly child: ChildProcess
  readonly origin: string
  readonly stop: () => Promise<void>
}

/** Starts a server process and waits until `readyPath` answers 2xx or 401. */
export const startProcess = async (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  readyPath: string
): Promise<Started> => {
  const port = await freePort()
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port) },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const origin = `http://127.0.0.1:${port}`
  for (let attempt = 0; attempt < 600; attempt++) {
    const ok = await fetch(`${origin}${readyPath}`).then((r) => r.status < 500, () => false)
    if (ok) {
      return {
        child,
        origin,
        stop: async () => {
          if (child.exitCode !== null) return
          const exited = once(child, "exit")
          child.kill("SIGTERM")
          await exited
        }
      }
    }
    if (child.exitCode !== null) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  child.kill("SIGKILL")
  throw new Error(`${args.join(" ")} did not start`)
}
