import { readFileSync } from "node:fs"

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
