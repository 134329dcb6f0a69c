import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { connect } from "node:net"
import { guardResource } from "./orphanGuard.ts"

/** One server line of HAProxy's `show stat`, as far as tests read it. */
export interface HaproxyServerStat {
  readonly backend: string
  readonly server: string
  /** `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`, `DRAIN`, `no check`. */
  readonly status: string
  /** Requests (sessions) sent to it so far. */
  readonly total: number
  /** Sessions open right now. */
  readonly current: number
}

export interface Haproxy {
  readonly child: ChildProcess
  readonly output: () => string
  /** A command of the runtime API (the `stats socket`), e.g. `show stat`; its answer. */
  readonly command: (line: string) => Promise<string>
  /** Every server of every backend, from `show stat`. */
  readonly servers: () => Promise<ReadonlyArray<HaproxyServerStat>>
  readonly stop: () => Promise<void>
}

const ask = (socketPath: string, line: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(socketPath)
    let answer = ""
    const timer = setTimeout(() => socket.destroy(new Error(`no answer to "${line}" within 5 s`)), 5_000)
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (answer += chunk))
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.on("end", () => {
      clearTimeout(timer)
      resolve(answer)
    })
    socket.end(`${line}\n`)
  })

const parseStat = (csv: string): Array<HaproxyServerStat> => {
  const [header, ...rows] = csv.trim().split("\n")
  const columns = (header ?? "").replace(/^# /, "").split(",")
  const at = (row: Array<string>, name: string) => row[columns.indexOf(name)] ?? ""
  return rows
    .map((line) => line.split(","))
    .filter((row) => !["FRONTEND", "BACKEND"].includes(at(row, "svname")))
    .map((row) => ({
      backend: at(row, "pxname"),
      server: at(row, "svname"),
      status: at(row, "status"),
      total: Number(at(row, "stot")),
      current: Number(at(row, "scur"))
    }))
}

/**
 * HAProxy in the foreground with the configuration file `configFile`, which
 * reads its addresses from `env` ("${VAR}" in the file), and a runtime API at
 * `runtimeSocket` (the configuration's `stats socket`). Resolves once the runtime
 * API answers; the servers' health checks then take their own time.
 */
export const startHaproxy = async (options: {
  readonly binary?: string
  readonly configFile: string
  readonly runtimeSocket: string
  readonly env: Record<string, string>
}): Promise<Haproxy> => {
  const child = spawn(options.binary ?? "haproxy", ["-db", "-f", options.configFile], {
    env: { PATH: process.env.PATH ?? "", ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const forget = child.pid === undefined
    ? () => {}
    : guardResource({ kind: "process", pid: child.pid, commandLineIncludes: options.configFile })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const command = (line: string) => ask(options.runtimeSocket, line)
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit")
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
    forget()
  }
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`haproxy exited (${child.exitCode ?? child.signalCode}):\n${output}`)
    }
    const answered = await command("show info").then(() => true, () => false)
    if (answered) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`haproxy's runtime API did not answer within 10 s:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    child,
    output: () => output,
    command,
    servers: async () => parseStat(await command("show stat")),
    stop
  }
}
