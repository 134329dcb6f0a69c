/**
 * Schemathesis, the schema-driven fuzzer QA teams use, run with every check
 * against a real server process, loaded with the document that process
 * serves. Every request it sends that the document calls valid must be
 * accepted, every one it calls invalid refused, and every answer must match
 * the document: status, content type, headers and body.
 *
 * Two kinds of finding are not the document's to fix, and only those two are
 * let through, each named below; any other failed check fails the test:
 * - an undeclared query parameter is ignored by the server (its tests pin
 *   that), while Schemathesis' coverage phase takes every parameter set as
 *   closed; OpenAPI has no keyword to say either way;
 * - a valid create can be refused because of the server's state, not the
 *   request: an `Idempotency-Key` that Schemathesis already sent with another
 *   body is 422 (or 409 while the first is in flight), as documented. So can
 *   the beta operations (issue 13): an order for a pet that is no longer
 *   `available` (409 `pet_not_available`), a change whose `If-Match` names no
 *   current version of the pet (412 `precondition_failed`), a cancel or
 *   delivery of an order that is no longer `pending` (409
 *   `invalid_transition`), a delete of a pet with an open order (409
 *   `pet_has_open_order`);
 * - an `orderId` that breaks out of its path segment turns
 *   `POST /store/orders/{orderId}/cancel` into getOrder's path, where POST is
 *   rightly 405: an empty one (`/store/orders//cancel` is sent as
 *   `/store/orders/cancel`), or one holding `?` unencoded, where the path
 *   ends. (One holding `;` or `#` unencoded is an unknown path, 404, since
 *   the router would stop reading there: README "Paths");
 * - a webhook URL the document admits but the operator's policy refuses (400:
 *   `http://` without WEBHOOK_ALLOW_HTTP, a private address), and a key's
 *   eleventh endpoint (400): the document cannot carry a deployment's switches.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { schemathesis } from "./support/schemathesis.ts"
import { type StartedProcess, startServerProcess } from "@petstore/test-support"

const run = promisify(execFile)

interface Check {
  readonly name: string
  readonly value: "success" | "failure" | "error" | "skip"
  readonly message?: string
  readonly request: { readonly method: string; readonly uri: string }
  readonly response?: { readonly status_code: number; readonly body?: string }
  readonly example: { readonly query?: Record<string, ReadonlyArray<string>> | null }
}
interface Execution {
  readonly verbose_name: string
  readonly result: { readonly checks: ReadonlyArray<Check>; readonly errors: ReadonlyArray<unknown> }
}

const DOCUMENTED_QUERY = new Set(["limit", "status", "cursor", "type"])

const beta = [
  "PATCH /v1/pets/{petId}",
  "DELETE /v1/pets/{petId}",
  "POST /v1/store/orders",
  "GET /v1/store/orders",
  "GET /v1/store/orders/{orderId}",
  "POST /v1/store/orders/{orderId}/cancel",
  "POST /v1/store/orders/{orderId}/deliver"
]
const bodyCode = (check: Check) => {
  try {
    return JSON.parse(Buffer.from(check.response?.body ?? "", "base64").toString("utf8")).code as unknown
  } catch {
    return undefined
  }
}

const bodyMessage = (check: Check) => {
  try {
    return String(JSON.parse(Buffer.from(check.response?.body ?? "", "base64").toString("utf8")).message)
  } catch {
    return ""
  }
}

/** The path the router matches: it ends at the first `?`, `#` or `;`, and an empty segment collapses. */
const routedPath = (uri: string) => uri.slice(new URL(uri).origin.length).split(/[?#;]/)[0]!.replace(/\/{2,}/g, "/")

/** Why a failed check is not a fault of the document or the server, or undefined when it is one. */
const explained = (check: Check): string | undefined => {
  if (
    check.name === "negative_data_rejection" &&
    Object.keys(check.example.query ?? {}).some((key) => !DOCUMENTED_QUERY.has(key))
  ) {
    return "an undeclared query parameter is ignored"
  }
  if (
    check.name === "positive_data_acceptance" &&
    [409, 422].includes(check.response?.status_code ?? 0) &&
    ["idempotency_key_in_flight", "idempotency_key_reused"].includes(bodyCode(check) as string)
  ) {
    return "an Idempotency-Key reused with another body"
  }
  if (
    check.name === "positive_data_acceptance" &&
    ((check.response?.status_code === 409 &&
      ["pet_not_available", "invalid_transition", "pet_has_open_order"].includes(bodyCode(check) as string)) ||
      (check.response?.status_code === 412 && bodyCode(check) === "precondition_failed"))
  ) {
    return "an order or a change refused because of the pet's or the order's state"
  }
  if (
    check.name === "positive_data_acceptance" &&
    check.response?.status_code === 400 &&
    check.request.uri.includes("/v1/webhooks/endpoints") &&
    /body\.url|at most \d+ webhook endpoints/.test(bodyMessage(check))
  ) {
    return "a webhook URL the operator's policy refuses (https only, no private addresses), or a key's eleventh endpoint"
  }
  if (
    ["status_code_conformance", "negative_data_rejection"].includes(check.name) &&
    check.response?.status_code === 405 &&
    check.request.method === "POST" &&
    check.request.uri.includes("/v1/store/orders/") &&
    !/\/v1\/store\/orders\/[^/]+\/(cancel|deliver)$/.test(routedPath(check.request.uri))
  ) {
    return "an orderId that broke out of its path segment, into getOrder's path"
  }
  return undefined
}

describe.skipIf("skip" in schemathesis)("Schemathesis against a real server process", () => {
  let server: StartedProcess
  let workDir: string

  beforeAll(async () => {
    // Anonymous requests (the ignored_auth check sends many) must not run into the per-address limit.
    server = await startServerProcess({ DATA_DIR: ":memory:", ANONYMOUS_RATE_LIMIT: "1000000" })
    workDir = mkdtempSync(join(tmpdir(), "schemathesis-"))
  })
  afterAll(async () => {
    await server?.server.stop()
    if (workDir) rmSync(workDir, { recursive: true, force: true })
  })

  it(
    "finds no request the document calls valid that the server refuses, no invalid one it accepts, no answer the document does not describe",
    async () => {
      const key = await server.createKey("enterprise", { perMinute: 1_000_000, perDay: 100_000_000 })
      const report = join(workDir, "report.tar.gz")
      const args = [
        "run",
        `${server.origin}/v1/openapi.json`,
        // The document's servers end in /v1 and its paths are relative to them.
        "--base-url",
        `${server.origin}/v1`,
        "-H",
        `Authorization: Bearer ${key}`,
        "--checks",
        "all",
        "--experimental=openapi-3.1",
        "--experimental=positive_data_acceptance",
        "--experimental=coverage-phase",
        "-D",
        "all",
        "--stateful=links",
        "--experimental-no-failfast",
        // Bounded, and the same cases every run: CI's whole run has a budget.
        "--hypothesis-max-examples",
        "25",
        "--hypothesis-phases",
        "explicit,generate",
        "--hypothesis-derandomize",
        "--no-color",
        `--report=${report}`
      ]
      const { stdout } = await run((schemathesis as { readonly bin: string }).bin, args, {
        maxBuffer: 64 * 1024 * 1024,
        timeout: 240_000,
        // Hypothesis keeps its example database in the working directory.
        cwd: workDir,
        // A fixed hash seed, so Python's set and dict order (and with it the cases) is the same every run.
        env: { ...process.env, SCHEMATHESIS_TELEMETRY: "false", NO_COLOR: "1", PYTHONHASHSEED: "0" }
      }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
        // Exit code 1 means "some check failed": the report says which, and whether each is explained.
        if (error.code === 1) return { stdout: error.stdout ?? "" }
        throw new Error(`st failed (${error.code}):\n${error.stdout}\n${error.stderr}`)
      })

      await run("tar", ["xzf", report, "-C", workDir])
      const events = readdirSync(join(workDir, "events")).map((file) =>
        JSON.parse(readFileSync(join(workDir, "events", file), "utf8"))
      )
      expect(events.some((event) => "Finished" in event), stdout).toBe(true)
      const executions: Array<Execution> = events.filter((event) => "AfterExecution" in event).map((event) =>
        event.AfterExecution
      )

      const checks = executions.flatMap((execution) => execution.result.checks.map((check) => ({ execution, check })))
      const unexplained = checks
        .filter(({ check }) => check.value !== "success" && explained(check) === undefined)
        .map(({ execution, check }) =>
          `${execution.verbose_name}: ${check.name} ${check.value} (${
            check.message ?? ""
          }): ${check.request.method} ${check.request.uri} -> ${check.response?.status_code}`
        )
      expect(unexplained, stdout).toEqual([])
      expect(executions.flatMap((execution) => execution.result.errors), stdout).toEqual([])

      // It really exercised every operation, and the createPet -> getPet link.
      const tested = new Set(executions.map((execution) => execution.verbose_name))
      expect([...tested].filter((name) => !beta.includes(name)).sort()).toEqual([
        "GET /v1/pets",
        "GET /v1/pets/{petId}",
        "GET /v1/rate_limit",
        "POST /v1/pets"
      ])
      // And the beta operations of issue 13, and placeOrder's links to getOrder, cancelOrder and deliverOrder.
      expect([...tested].filter((name) => beta.includes(name)).sort()).toEqual([...beta].sort())
      for (const name of tested) {
        expect(checks.filter(({ execution }) => execution.verbose_name === name).length, name).toBeGreaterThan(20)
      }
      expect(stdout).toMatch(/Collected API links: 4/)
    },
    300_000
  )
})
