/**
 * What a server allocates per request: loaded into the server with `--import=./bench/src/allocationProbe.ts`
 * (./allocation.ts does), the first SIGUSR2 starts V8's sampling heap profiler, counting every allocation
 * sampled whether or not a collection has freed it since, and starts counting the HTTP requests the process
 * receives; the second stops both and writes `{ requests, bytes, sites }` to ALLOCATION_PROFILE_FILE. A
 * diagnostic, never loaded otherwise. The sampled bytes, scaled by V8 for the sampling rate, estimate everything
 * the heap was asked for, so the figure hardly depends on the request rate or the machine's load.
 */
import diagnostics from "node:diagnostics_channel"
import { readFileSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { fileURLToPath } from "node:url"

interface ProfileNode {
  readonly callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

const file = process.env.ALLOCATION_PROFILE_FILE ?? "allocation-profile.json"
const samplingInterval = Number(process.env.ALLOCATION_SAMPLING_INTERVAL ?? 4096)
const session = new Session()
session.connect()
let requests = 0
let counting = false
diagnostics.subscribe("http.server.request.start", () => {
  if (counting) requests++
})

/** A bundle's modules, by the line each starts at (rolldown heads each with a `// path` comment). */
const bundleRegions = new Map<string, Array<{ line: number; module: string }>>()
const regionsOf = (url: string) => {
  let regions = bundleRegions.get(url)
  if (regions === undefined) {
    regions = []
    try {
      const lines = readFileSync(fileURLToPath(url), "utf8").split("\n")
      lines.forEach((text, index) => {
        const region = /^\/\/ ((?:\.\.\/)*(?:src|node_modules)\/\S+)$/.exec(text)
        if (region) regions!.push({ line: index, module: region[1]!.replace(/^.*node_modules\//, "") })
      })
    } catch {
      // Not a file of this host's: frames keep their address only.
    }
    bundleRegions.set(url, regions)
  }
  return regions
}
const moduleAt = (url: string, line: number) => {
  if (!url.startsWith("file:")) return url
  let found = ""
  for (const region of regionsOf(url)) {
    if (region.line > line) break
    found = region.module
  }
  return found === "" ? url.replace(/^.*\//, "") : `${found}@${url.replace(/^.*\//, "")}`
}
const frameName = (frame: ProfileNode["callFrame"]) =>
  `${frame.functionName || "(anonymous)"} ${moduleAt(frame.url, frame.lineNumber)}:${frame.lineNumber + 1}`

const toggle = async () => {
  if (!counting) {
    requests = 0
    counting = true
    await session.post("HeapProfiler.startSampling", {
      samplingInterval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    return
  }
  counting = false
  const { profile } = await session.post("HeapProfiler.stopSampling") as unknown as {
    profile: { head: ProfileNode }
  }
  // Self bytes by allocating frame, and by the frame with its caller (what built it, and from where).
  const sites = new Map<string, number>()
  const stacks = new Map<string, number>()
  let bytes = 0
  const walk = (node: ProfileNode, path: ReadonlyArray<string>) => {
    const name = frameName(node.callFrame)
    const here = [...path, name]
    if (node.selfSize > 0) {
      bytes += node.selfSize
      sites.set(name, (sites.get(name) ?? 0) + node.selfSize)
      const stack = here.slice(-Number(process.env.ALLOCATION_STACK_DEPTH ?? 8)).reverse().join("  <  ")
      stacks.set(stack, (stacks.get(stack) ?? 0) + node.selfSize)
    }
    for (const child of node.children) walk(child, here)
  }
  walk(profile.head, [])
  const top = (map: Map<string, number>, count: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, size]) => ({ name, size }))
  writeFileSync(file, JSON.stringify({ requests, bytes, sites: top(sites, 80), stacks: top(stacks, 400) }, null, 1))
}

process.on("SIGUSR2", () => void toggle())
