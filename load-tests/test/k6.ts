import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { fileURLToPath } from "node:url"

/** Where the k6 scripts are. */
export const scriptsDir = fileURLToPath(new URL("..", import.meta.url))

/** The paths of K6_BINS: separated by `:` or `,` (the README names both), blanks ignored. */
export const parseK6Bins = (value: string | undefined): ReadonlyArray<string> =>
  (value ?? "").split(/[:,]/).map((path) => path.trim()).filter((path) => path !== "")

/**
 * Every real k6 binary: on PATH, then in K6_BINS, each once. A path of K6_BINS that is no file is an error,
 * never a suite silently skipped.
 */
export const findK6Binaries = (): ReadonlyArray<string> => {
  const named = parseK6Bins(process.env.K6_BINS)
  const missing = named.filter((path) => !existsSync(path))
  if (missing.length > 0) {
    throw new Error(`K6_BINS names no k6 at ${missing.join(", ")} (paths separated by : or ,)`)
  }
  const onPath = (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(dir, "k6"))
    .find(existsSync)
  const seen = new Set<string>()
  return [...(onPath === undefined ? [] : [onPath]), ...named].filter((path) => {
    const real = realpathSync(path)
    if (seen.has(real)) return false
    seen.add(real)
    return true
  })
}

/**
 * What every k6 gets in its environment besides the script's variables: no usage report. k6 otherwise sends
 * one to Grafana at the end of each run (the flag `--no-usage-report` says the same to `k6 run`).
 */
export const k6Environment = (env: Record<string, string>): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? tmpdir(),
  K6_NO_USAGE_REPORT: "true",
  ...env
})

/** `v0.49.0`, from `k6 version`. */
export const k6Version = (binary: string): string => {
  const output = execFileSync(binary, ["version"], { encoding: "utf8", timeout: 30_000 })
  return /v\d+\.\d+\.\d+/.exec(output)?.[0] ?? output.trim()
}

/** What the end-of-test summary (`--summary-export`) says about a metric. */
export interface SummaryMetric {
  readonly count?: number
  readonly value?: number
  readonly max?: number
  readonly passes?: number
  readonly fails?: number
  readonly thresholds?: Record<string, boolean>
}

export interface K6Run {
  readonly code: number | null
  readonly seconds: number
  /** k6's own output: the summary, and any error or console line of the script. */
  readonly output: string
  readonly metrics: Record<string, SummaryMetric>
}

/**
 * `k6 run <script>` on the real binary. `env` reaches the script as `__ENV` through the process
 * environment, never on the command line, so API keys appear in no process listing and no log.
 *
 * `--address ""` turns off k6's REST API, which nothing here uses. Older k6 (0.49 among them) listens on
 * 127.0.0.1:6565 by default, so a second k6 on the machine (another suite's, another checkout's) would
 * find the port taken.
 */
export const runK6 = (
  binary: string,
  script: string,
  env: Record<string, string>,
  timeoutMs: number
): Promise<K6Run> => {
  const started = Date.now()
  const dir = mkdtempSync(join(tmpdir(), "k6-summary-"))
  const summary = join(dir, "summary.json")
  const child = spawn(
    binary,
    ["run", "--quiet", "--no-color", "--no-usage-report", "--address", "", "--summary-export", summary, script],
    {
      cwd: scriptsDir,
      // Only what k6 needs and what the script is given: the scripts read every variable as configuration.
      env: k6Environment(env),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: timeoutMs,
      killSignal: "SIGKILL"
    }
  )
  let output = ""
  child.stdout.on("data", (chunk) => (output += chunk))
  child.stderr.on("data", (chunk) => (output += chunk))
  return new Promise((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code, signal) => {
      let metrics: Record<string, SummaryMetric> = {}
      try {
        metrics = (JSON.parse(readFileSync(summary, "utf8")) as { metrics: Record<string, SummaryMetric> }).metrics
      } catch {
        // No summary: k6 refused the script or was killed; its output says why.
      }
      rmSync(dir, { recursive: true, force: true })
      resolve({
        code: signal === null ? code : null,
        seconds: Math.round((Date.now() - started) / 1000),
        output: signal === null ? output : `${output}\nkilled by ${signal} after ${timeoutMs} ms`,
        metrics
      })
    })
  })
}

/** `k6 inspect <script>`: compiles the script and evaluates its options, sending nothing. */
export const inspectK6 = (binary: string, script: string, env: Record<string, string>) =>
  new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(binary, ["inspect", script], {
      cwd: scriptsDir,
      env: k6Environment(env),
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, output }))
  })

/** One line per run for the test log: which k6, which script, how it ended. */
export const runLine = (version: string, script: string, run: K6Run): string => {
  const checks = run.metrics.checks
  const crossed = Object.entries(run.metrics).flatMap(([name, metric]) =>
    Object.entries(metric.thresholds ?? {}).filter(([, failed]) => failed).map(([threshold]) => `${name}: ${threshold}`)
  )
  const thresholds = Object.values(run.metrics).reduce(
    (sum, metric) => sum + Object.keys(metric.thresholds ?? {}).length,
    0
  )
  return `k6 ${version} run ${script}: exit ${String(run.code)} after ${run.seconds} s; ` +
    `checks ${checks?.passes ?? 0} passed, ${checks?.fails ?? 0} failed; ` +
    `thresholds ${thresholds - crossed.length} of ${thresholds} held${
      crossed.length > 0 ? ` (crossed: ${crossed.join(", ")})` : ""
    }`
}
