// `pnpm start`, `pnpm keys`, `pnpm migrate`, `pnpm conformance`: runs a workspace package's build, building it
// first only when it is missing or older than its sources, so that a command does not pay for turbo on every
// call (README, first section). Plain JavaScript, not TypeScript: it runs before every such command, and Node's
// type stripping would add ~50 ms to each.
//
//   node scripts/runBuilt.js apps/keys dist/main.js list --json
//   node scripts/runBuilt.js apps/server        (no entry: only builds it when needed; the suites' global setup)
//
// A package's build is current when a stamp written at the start of its last build here is newer than every
// input turbo hashes for it (`src/`, `tsconfig*.json`, `package.json`) in it and in the workspace packages it
// runs with, and than the lockfile and the shared compiler settings. Otherwise `turbo run build` builds it
// (turbo's cache answers when the sources are as they were) and the stamp is renewed. The program then runs in
// this process, as if started as `node <entry> …`: one Node start, not two, and with Node's compile cache.
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, realpathSync, statSync, utimesSync, writeFileSync } from "node:fs"
import module from "node:module"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const stampDir = join(root, "node_modules", ".cache", "run-built")

const mtimeOf = (path) => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return -1
  }
}

/** The newest modification time under `dir`, directories included (a deleted file changes its directory's). */
const newestUnder = (dir) => {
  let newest = mtimeOf(dir)
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return newest
  }
  for (const entry of entries) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : mtimeOf(path))
  }
  return newest
}

const manifestOf = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))

/** The package and the workspace packages it runs with (its `workspace:` dependencies, not its tests'). */
const closureOf = (dir, seen = new Set()) => {
  const real = realpathSync(dir)
  if (seen.has(real)) return seen
  seen.add(real)
  for (const [name, version] of Object.entries(manifestOf(real).dependencies ?? {})) {
    if (String(version).startsWith("workspace:")) closureOf(join(real, "node_modules", name), seen)
  }
  return seen
}

const newestInput = (packages) => {
  let newest = Math.max(
    ...["pnpm-lock.yaml", "tsconfig.base.json", "turbo.json"].map((file) => mtimeOf(join(root, file)))
  )
  for (const dir of packages) {
    newest = Math.max(newest, newestUnder(join(dir, "src")), mtimeOf(join(dir, "package.json")))
    for (const file of readdirSync(dir)) {
      if (/^tsconfig.*\.json$/.test(file)) newest = Math.max(newest, mtimeOf(join(dir, file)))
    }
  }
  return newest
}

const [target, entry, ...args] = process.argv.slice(2)
const dir = resolve(root, target)
const packages = closureOf(dir)
const { name } = manifestOf(dir)
const stamp = join(stampDir, `${name.replace(/[^a-z0-9.-]+/gi, "_")}.stamp`)
const builtAt = mtimeOf(stamp)
const missing = mtimeOf(join(dir, "dist")) < 0

/** Builds the package with turbo, and stamps the build; a failed build ends the command. */
const build = () => {
  const why = missing
    ? "not built yet"
    : builtAt < 0
    ? "no build recorded here yet"
    : "its sources changed since its last build"
  process.stderr.write(`Building ${name} (${why}) …\n`)
  const startedAt = new Date()
  const turbo = join(root, "node_modules", ".bin", "turbo")
  const result = spawnSync(turbo, ["run", "build", `--filter=${name}`, "--output-logs=errors-only"], {
    cwd: root,
    // Turbo's report is shown only when the build failed, and then on stderr: the command's stdout may be read by
    // a script (`pnpm -s keys list --json`).
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024
  })
  if (result.error !== undefined || result.status !== 0) {
    process.stderr.write(result.stdout ?? "")
    const cause = result.error ? `: ${result.error.message} (has \`pnpm install\` run?)` : " (its errors are above)"
    process.stderr.write(`Building ${name} failed${cause}\n`)
    process.exit(result.status || 1)
  }
  mkdirSync(stampDir, { recursive: true })
  writeFileSync(stamp, "")
  // Dated when the build started: a source saved while it ran is newer, and is built next time.
  utimesSync(stamp, startedAt, startedAt)
}

if (missing || builtAt <= newestInput(packages)) build()
if (entry === undefined) process.exit(0)

// Compiled code is cached across runs (in the system's temporary folder): parsing the keys bundle was a fifth of
// a call's CPU time.
module.enableCompileCache?.()
const program = join(dir, entry)
process.argv = [process.argv[0], program, ...args]
await import(pathToFileURL(program).href)
