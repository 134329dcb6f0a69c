import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { findToolBinaries, optionalToolMissing } from "@petstore/test-support"

/** The majors whose command line and reports the suite knows: 3 (the last 3.x) and 4, the current one. */
export type SchemathesisMajor = 3 | 4

/**
 * The major of a Schemathesis `--version` output (`st, version 3.39.16`; `Schemathesis v4.9.0` and the
 * like), or undefined when the output is not Schemathesis' (an `st` on PATH may be another program) or
 * its major is one the suite does not know.
 */
export const schemathesisMajor = (versionOutput: string): SchemathesisMajor | undefined => {
  const match = /\b(?:st|schemathesis)\b[ ,]*(?:version\s+)?v?(\d+)\.\d+/i.exec(versionOutput)
  const major = Number(match?.[1])
  return major === 3 || major === 4 ? major : undefined
}

export interface SchemathesisRun {
  /** The OpenAPI document's URL, as the server serves it. */
  readonly schemaUrl: string
  /** The document's server: paths are relative to it. */
  readonly baseUrl: string
  readonly headers: ReadonlyArray<string>
  /** Generated cases per operation, the same every run: CI's whole run has a budget. */
  readonly maxExamples: number
  /** Where the report goes: v3's tarball of events, v4's NDJSON events. */
  readonly reportPath: string
}

/**
 * The command line of a run with every check and every phase (examples, coverage, fuzzing and the
 * stateful links), deterministic and going on after failures, for either major: Schemathesis 4 renamed or
 * replaced most of 3's options (`--url`, `--phases`, `--max-examples`, `--mode`, `--report ndjson`).
 */
export const schemathesisArguments = (major: SchemathesisMajor, run: SchemathesisRun): Array<string> => {
  const headers = run.headers.flatMap((header) => ["-H", header])
  return major === 3
    ? [
      "run",
      run.schemaUrl,
      "--base-url",
      run.baseUrl,
      ...headers,
      "--checks",
      "all",
      "--experimental=openapi-3.1",
      "--experimental=positive_data_acceptance",
      "--experimental=coverage-phase",
      "-D",
      "all",
      "--stateful=links",
      "--experimental-no-failfast",
      "--hypothesis-max-examples",
      String(run.maxExamples),
      "--hypothesis-phases",
      "explicit,generate",
      "--hypothesis-derandomize",
      "--no-color",
      `--report=${run.reportPath}`
    ]
    : [
      "--no-color",
      "run",
      run.schemaUrl,
      "--url",
      run.baseUrl,
      ...headers,
      "--checks",
      "all",
      "--phases",
      "examples,coverage,fuzzing,stateful",
      "--mode",
      "all",
      "--continue-on-failure",
      "--max-examples",
      String(run.maxExamples),
      "--generation-deterministic",
      "--report",
      "ndjson",
      "--report-ndjson-path",
      run.reportPath
    ]
}

/** One check of one case, as the test judges it, whichever major ran it. */
export interface Check {
  readonly name: string
  readonly value: "success" | "failure" | "error" | "skip"
  readonly message?: string
  readonly request: { readonly method: string; readonly uri: string }
  /** `body` is base64. */
  readonly response?: { readonly status_code: number; readonly body?: string }
  readonly example: { readonly query?: Record<string, unknown> | null }
}

/** What a run did to one operation (or one chain of the stateful phase), by its label, e.g. `GET /pets`. */
export interface Execution {
  readonly label: string
  readonly checks: ReadonlyArray<Check>
  readonly errors: ReadonlyArray<unknown>
}

export interface SchemathesisReport {
  readonly finished: boolean
  readonly executions: ReadonlyArray<Execution>
}

/** The document's paths are relative to servers ending in /v1: 3 labels operations with it, 4 without. */
const withoutVersion = (label: string) => label.replace(/ \/v1\//, " /")

/** Schemathesis 3: the events of the report tarball, extracted into `directory`/events, one JSON file each. */
export const readReport3 = (directory: string): SchemathesisReport => {
  const events = readdirSync(join(directory, "events")).map((file) =>
    JSON.parse(readFileSync(join(directory, "events", file), "utf8"))
  )
  return {
    finished: events.some((event) => "Finished" in event),
    executions: events.filter((event) => "AfterExecution" in event).map(({ AfterExecution: execution }) => ({
      label: withoutVersion(execution.verbose_name),
      checks: execution.result.checks,
      errors: execution.result.errors
    }))
  }
}

/**
 * Schemathesis 4: the NDJSON report, one engine event a line. A finished scenario carries its recorder:
 * the cases, each case's checks and its request and answer; errors are events of their own.
 */
export const readReport4 = (ndjson: string): SchemathesisReport => {
  const events = ndjson.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line))
  const errors = events.filter((event) => "NonFatalError" in event).map(({ NonFatalError: error }) => error)
  const executions = events.filter((event) => "ScenarioFinished" in event).map(({ ScenarioFinished: scenario }) => {
    const recorder = scenario.recorder
    const checks = Object.entries((recorder.checks ?? {}) as Record<string, Array<any>>).flatMap(([caseId, nodes]) => {
      const interaction = recorder.interactions?.[caseId]
      const testCase = recorder.cases?.[caseId]?.value ?? {}
      return nodes.map((node): Check => ({
        name: node.name,
        value: String(node.status).toLowerCase().replace(/^status\./, "") as Check["value"],
        ...(node.failure_info?.failure === undefined
          ? {}
          : {
            message: [node.failure_info.failure.title, node.failure_info.failure.message].filter(Boolean).join(": ")
          }),
        request: { method: interaction?.request?.method ?? testCase.method, uri: interaction?.request?.uri ?? "" },
        ...(interaction?.response == null ? {} : {
          response: {
            status_code: interaction.response.status_code,
            body: interaction.response.content?.$base64 ?? ""
          }
        }),
        example: { query: testCase.query ?? null }
      }))
    })
    return { label: withoutVersion(recorder.label), checks, errors: [] }
  })
  const unlabelled = errors.length === 0 ? [] : [{ label: "(errors)", checks: [], errors }]
  return { finished: events.some((event) => "EngineFinished" in event), executions: [...executions, ...unlabelled] }
}

const majorOf = (path: string) => {
  try {
    return schemathesisMajor(execFileSync(path, ["--version"], { encoding: "utf8", timeout: 30_000 }))
  } catch {
    return undefined
  }
}

/**
 * Schemathesis' `st`, on PATH or in `SCHEMATHESIS_BIN`, of a major the suite knows. No registry these
 * machines reach serves it, so when it is missing the suite is skipped with one line, under CI=true too.
 */
export const schemathesis: { readonly bin: string; readonly major: SchemathesisMajor } | { readonly skip: true } =
  (() => {
    for (const bin of findToolBinaries({ command: "st", envVar: "SCHEMATHESIS_BIN" })) {
      const major = majorOf(bin)
      if (major !== undefined) return { bin, major }
    }
    return optionalToolMissing(
      "Schemathesis 4 (or 3) is not installed, so the OpenAPI document was not fuzzed by it: " +
        "`pipx install schemathesis` puts `st` on PATH, or point SCHEMATHESIS_BIN at it"
    )
  })()
