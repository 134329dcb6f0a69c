import { ADMIN_TOKEN, asServerProcess, freePort, type ServerProcess, waitUntilReady } from "@petstore/test-support"
import { spawn } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

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

/** Where the bench's server processes write their logs: one file each, as a log shipper would read them. */
export const logDir = mkdtempSync(join(tmpdir(), "petstore-bench-logs-"))

export interface LoggedProcess {
  readonly server: ServerProcess
  readonly origin: string
  readonly admin: string
  /** The file its stdout (the request log) goes to, and how many bytes it holds so far. */
  readonly logFile: string
  readonly logBytes: () => number
}

/**
 * A process (the server, or a floor) on free ports, its stdout going to a file rather than to a pipe this process
 * reads: with request logging on (LOG_LEVEL=Info, what the targets ask for), a pipe would keep every line in the
 * bench's memory. `nodeOptions` adds flags such as `--cpu-prof`.
 */
export const startLogged = async (
  label: string,
  entry: string,
  env: Record<string, string>,
  options: {
    readonly readyPath?: string
    readonly ready?: (status: number) => boolean
    readonly nodeOptions?: ReadonlyArray<string>
  } = {}
): Promise<LoggedProcess> => {
  const [port, adminPort] = [await freePort(), await freePort()]
  const logFile = join(logDir, `${label.replace(/[^A-Za-z0-9_-]+/g, "-")}-${port}.log`)
  const fd = openSync(logFile, "w")
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), entry], {
    env: {
      PATH: process.env.PATH ?? "",
      LOG_LEVEL: "Info",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN,
      HOST: "127.0.0.1",
      ...env
    },
    stdio: ["ignore", fd, "pipe"]
  })
  closeSync(fd)
  let errors = ""
  child.stderr!.on("data", (chunk) => (errors += chunk))
  const server = asServerProcess(child, () => errors)
  const origin = `http://127.0.0.1:${port}`
  await waitUntilReady(server, `${origin}${options.readyPath ?? "/readyz"}`, 60_000, options.ready)
  return {
    server,
    origin,
    admin: `http://127.0.0.1:${adminPort}`,
    logFile,
    logBytes: () => statSync(logFile).size
  }
}
