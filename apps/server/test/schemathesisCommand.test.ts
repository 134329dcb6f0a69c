/**
 * How the Schemathesis suite (`schemathesis.system.test.ts`) finds `st`, builds its command line and reads
 * its report, for both majors: Schemathesis cannot be installed on these machines (no Python registry), so
 * the parts that differ between 3 and 4 are checked here without it.
 */
import { describe, expect, it } from "vitest"
import { readReport4, schemathesisArguments, schemathesisMajor } from "./support/schemathesis.ts"

const run = {
  schemaUrl: "http://127.0.0.1:9/v1/openapi.json",
  baseUrl: "http://127.0.0.1:9/v1",
  headers: ["Authorization: Bearer psk_test"],
  maxExamples: 25,
  reportPath: "/tmp/report"
}

/** The value following an option, or undefined. */
const optionValue = (args: ReadonlyArray<string>, option: string) => {
  const at = args.indexOf(option)
  return at < 0 ? undefined : args[at + 1]
}

describe("the Schemathesis version", () => {
  it.each<[string, 3 | 4 | undefined]>([
    ["st, version 3.39.16\n", 3],
    ["Schemathesis v4.9.0\n", 4],
    ["schemathesis, version 4.0.0", 4],
    ["st, version 2.8.6", undefined],
    ["Schemathesis v5.0.0", undefined],
    ["st 1.2.3 (a speed test)", undefined],
    ["", undefined]
  ])("%j is major %s", (output, major) => {
    expect(schemathesisMajor(output)).toBe(major)
  })
})

describe("the command line", () => {
  it("Schemathesis 4: every check, every phase, the document's server as --url, NDJSON report", () => {
    const args = schemathesisArguments(4, run)
    expect(args.slice(0, 3)).toEqual(["--no-color", "run", run.schemaUrl])
    expect(optionValue(args, "--url")).toBe(run.baseUrl)
    expect(optionValue(args, "-H")).toBe("Authorization: Bearer psk_test")
    expect(optionValue(args, "--checks")).toBe("all")
    expect(optionValue(args, "--phases")?.split(",").sort()).toEqual(["coverage", "examples", "fuzzing", "stateful"])
    expect(optionValue(args, "--mode")).toBe("all")
    expect(optionValue(args, "--max-examples")).toBe("25")
    expect(optionValue(args, "--report")).toBe("ndjson")
    expect(optionValue(args, "--report-ndjson-path")).toBe(run.reportPath)
    expect(args).toEqual(expect.arrayContaining(["--continue-on-failure", "--generation-deterministic"]))
    // None of the options 4 removed.
    for (
      const removed of ["--base-url", "--hypothesis-max-examples", "--stateful=links", "--experimental-no-failfast"]
    ) {
      expect(args.some((arg) => arg.startsWith(removed)), removed).toBe(false)
    }
  })

  it("Schemathesis 3: the same run in 3's options", () => {
    const args = schemathesisArguments(3, run)
    expect(args.slice(0, 2)).toEqual(["run", run.schemaUrl])
    expect(optionValue(args, "--base-url")).toBe(run.baseUrl)
    expect(optionValue(args, "--checks")).toBe("all")
    expect(optionValue(args, "--hypothesis-max-examples")).toBe("25")
    expect(optionValue(args, "--hypothesis-phases")).toBe("explicit,generate")
    expect(args).toEqual(
      expect.arrayContaining([
        "--experimental=coverage-phase",
        "--stateful=links",
        "--experimental-no-failfast",
        "--hypothesis-derandomize",
        `--report=${run.reportPath}`
      ])
    )
  })
})

describe("Schemathesis 4's NDJSON report", () => {
  const body = Buffer.from(JSON.stringify({ code: "invalid_request" })).toString("base64")
  const lines = [
    { Initialize: { command: "st run …", schemathesis_version: "4.9.0", seed: 1 } },
    {
      ScenarioFinished: {
        status: "failure",
        recorder: {
          label: "GET /pets",
          cases: { c1: { value: { method: "GET", path: "/pets", query: { limit: "0", extra: "1" } } } },
          checks: {
            c1: [
              { name: "not_a_server_error", status: "success" },
              {
                name: "negative_data_rejection",
                status: "failure",
                failure_info: { code_sample: "curl …", failure: { title: "Accepted invalid data", message: "…" } }
              }
            ]
          },
          interactions: {
            c1: {
              request: { method: "GET", uri: "http://127.0.0.1:9/v1/pets?limit=0&extra=1" },
              response: { status_code: 400, content: { $base64: body } }
            }
          }
        }
      }
    },
    { EngineFinished: { running_time: 1.5 } }
  ]

  it("gives each check with its case's request, answer and query, under the operation's label", () => {
    const report = readReport4(lines.map((line) => JSON.stringify(line)).join("\n") + "\n")
    expect(report.finished).toBe(true)
    expect(report.executions).toEqual([{
      label: "GET /pets",
      errors: [],
      checks: [
        {
          name: "not_a_server_error",
          value: "success",
          request: { method: "GET", uri: "http://127.0.0.1:9/v1/pets?limit=0&extra=1" },
          response: { status_code: 400, body },
          example: { query: { limit: "0", extra: "1" } }
        },
        expect.objectContaining({
          name: "negative_data_rejection",
          value: "failure",
          message: "Accepted invalid data: …"
        })
      ]
    }])
  })

  it("counts an unfinished run and errors as such", () => {
    const report = readReport4(JSON.stringify({ NonFatalError: { label: "GET /pets", value: { type: "X" } } }))
    expect(report.finished).toBe(false)
    expect(report.executions.flatMap((execution) => execution.errors)).toHaveLength(1)
  })
})
