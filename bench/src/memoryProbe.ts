/**
 * Where a server's resident memory is: loaded into the server with
 * `BENCH_SERVER_NODE_OPTIONS=--import=./bench/src/memoryProbe.ts`, it appends every 5 s one JSON line to
 * `<tmpdir>/petstore-memory-<pid>.jsonl`: `process.memoryUsage()`, the V8 heap spaces (size, used, physical)
 * and the anonymous and file-backed resident memory from /proc. A diagnostic for the soak, never loaded otherwise.
 */
import { appendFileSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import v8 from "node:v8"

const file = join(tmpdir(), `petstore-memory-${process.pid}.jsonl`)
const mib = (bytes: number) => Math.round(bytes / 2 ** 20 * 10) / 10
const statusMiB = (status: string, field: string) =>
  mib(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024)

setInterval(() => {
  const usage = process.memoryUsage()
  const status = readFileSync("/proc/self/status", "utf8")
  const spaces = Object.fromEntries(
    v8.getHeapSpaceStatistics().map((
      space
    ) => [space.space_name, {
      size: mib(space.space_size),
      used: mib(space.space_used_size),
      physical: mib(space.physical_space_size)
    }])
  )
  appendFileSync(
    file,
    JSON.stringify({
      at: Date.now(),
      rss: mib(usage.rss),
      rssAnon: statusMiB(status, "RssAnon"),
      rssFile: statusMiB(status, "RssFile"),
      heapPhysical: mib(v8.getHeapStatistics().total_physical_size),
      heapUsed: mib(usage.heapUsed),
      external: mib(usage.external),
      arrayBuffers: mib(usage.arrayBuffers),
      spaces
    }) + "\n"
  )
}, 5_000).unref()
