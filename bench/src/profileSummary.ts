/**
 * Where a `node --cpu-prof` profile of the bundled server spent its time: self time by package, by module and by
 * function, each position mapped back through the bundle's source map (Node's own `SourceMap`), so that Effect,
 * postgres.js and the server's modules are told apart although all run from `dist/main.js`.
 *
 * `node bench/src/profileSummary.ts <file.cpuprofile>` prints it; `pnpm bench --profile` calls it for each profile.
 */
import { readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import { fileURLToPath } from "node:url"

interface ProfileNode {
  readonly id: number
  readonly children?: ReadonlyArray<number>
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
    readonly columnNumber: number
  }
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** V8's pseudo-frames: not code of any package. */
const PSEUDO = new Set(["(garbage collector)", "(program)", "(idle)", "(root)"])

const sourceMaps = new Map<string, SourceMap | undefined>()
const sourceMapOf = (url: string) => {
  if (!sourceMaps.has(url)) {
    let map: SourceMap | undefined
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, "utf8")))
    } catch {
      map = undefined
    }
    sourceMaps.set(url, map)
  }
  return sourceMaps.get(url)
}

/** The package and module a frame's code comes from, e.g. `effect` and `effect/unstable/http/HttpServerResponse.ts`. */
const whereFrom = (frame: ProfileNode["callFrame"]): { pkg: string; module: string } => {
  if (PSEUDO.has(frame.functionName) && frame.url === "") return { pkg: frame.functionName, module: frame.functionName }
  if (frame.url === "") return { pkg: "(native)", module: "(native)" }
  if (frame.url.startsWith("node:")) return { pkg: "node", module: frame.url }
  let source = frame.url
  if (frame.url.startsWith("file:")) {
    const entry = sourceMapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber)
    if (entry !== undefined && "originalSource" in entry) source = entry.originalSource
  }
  // The map names sources relative to itself (`../src/…` for the server's own modules).
  if (frame.url.startsWith("file:") && !source.startsWith("file:") && !source.startsWith("/")) {
    source = new URL(source, frame.url).pathname
  }
  const inPackage = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(source)
  if (inPackage !== null) {
    return { pkg: inPackage[1]!, module: `${inPackage[1]}/${inPackage[2]!.replace(/^(src|dist\/esm|dist)\//, "")}` }
  }
  const inRepo = /\/(apps|packages)\/([^/]+)\/src\/(.*)$/.exec(source)
  if (inRepo !== null) return { pkg: `(${inRepo[2]})`, module: `${inRepo[2]}/${inRepo[3]}` }
  return { pkg: "(other)", module: source }
}

export interface ProfileShares {
  readonly busyMillis: number
  readonly byPackage: ReadonlyArray<readonly [string, number]>
  readonly byModule: ReadonlyArray<readonly [string, number]>
  readonly byFunction: ReadonlyArray<readonly [string, number]>
  /** Native code's self time (system calls: socket and file writes), by the module of its nearest caller outside Node. */
  readonly nativeByCaller: ReadonlyArray<readonly [string, number]>
}

/** Self time of every frame, in milliseconds of busy (not idle) time, grouped three ways and sorted. */
export const summarizeProfile = (file: string): ProfileShares => {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map<number, number>()
  profile.samples.forEach((id, index) => {
    // A sample's time is the gap to the next one.
    const micros = profile.timeDeltas[index + 1] ?? 0
    self.set(id, (self.get(id) ?? 0) + micros)
  })
  const packages = new Map<string, number>()
  const modules = new Map<string, number>()
  const functions = new Map<string, number>()
  let busy = 0
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame
    if (frame.functionName === "(idle)") continue
    busy += micros
    const { module, pkg } = whereFrom(frame)
    const add = (into: Map<string, number>, key: string) => into.set(key, (into.get(key) ?? 0) + micros / 1000)
    add(packages, pkg)
    add(modules, module)
    add(functions, `${frame.functionName || "(anonymous)"} ${module}`)
  }
  const parentOf = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
  const nativeCallers = new Map<string, number>()
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame
    if (frame.url !== "" || PSEUDO.has(frame.functionName)) continue
    let caller = parentOf.get(id)
    // Past Node's own modules too: the caller that matters is the package that wrote (postgres.js, the HTTP server).
    const internal = (id: number) => /^$|^node:/.test(byId.get(id)!.callFrame.url)
    while (caller !== undefined && internal(caller)) caller = parentOf.get(caller)
    const name = caller === undefined
      ? "(none)"
      : `${frame.functionName} from ${whereFrom(byId.get(caller)!.callFrame).module}`
    nativeCallers.set(name, (nativeCallers.get(name) ?? 0) + micros / 1000)
  }
  const sorted = (totals: Map<string, number>) => [...totals].sort((a, b) => b[1] - a[1])
  return {
    busyMillis: busy / 1000,
    byPackage: sorted(packages),
    byModule: sorted(modules),
    byFunction: sorted(functions),
    nativeByCaller: sorted(nativeCallers)
  }
}

/** The summary as a few Markdown tables, the top `rows` of each. */
export const formatProfileShares = (shares: ProfileShares, rows = 12) => {
  const table = (title: string, entries: ReadonlyArray<readonly [string, number]>) =>
    [
      `| ${title} | self ms | share |`,
      "| --- | ---: | ---: |",
      ...entries.slice(0, rows).map(([name, millis]) =>
        `| ${name.replaceAll("|", "\\|")} | ${millis.toFixed(0)} | ${(100 * millis / shares.busyMillis).toFixed(1)}% |`
      )
    ].join("\n")
  return [
    `busy ${shares.busyMillis.toFixed(0)} ms`,
    table("package", shares.byPackage),
    table("module", shares.byModule),
    table("function", shares.byFunction),
    table("native, by its caller", shares.nativeByCaller)
  ].join("\n\n")
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of process.argv.slice(2)) console.log(`${file}\n\n${formatProfileShares(summarizeProfile(file))}\n`)
}
