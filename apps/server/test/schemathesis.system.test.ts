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
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Check,
  readReport3,
  readReport4,
  schemathesis,
  schemathesisArguments,
  type SchemathesisReport
} from "./support/schemathesis.ts"
import { type StartedProcess, startServerProcess } from "@petstore/test-support"

const run = promisify(execFile)

const stable = ["GET /pets", "GET /pets/{petId}", "GET /rate_limit", "POST /pets"]

const DOCUMENTED_QUERY = new Set(["limit", "status", "cursor", "type"])

const beta = [
  "PATCH /pets/{petId}",
  "DELETE /pets/{petId}",
  "POST /store/orders",
  "GET /store/orders",
  "GET /store/orders/{orderId}",
  "POST /store/orders/{orderId}/cancel",
  "POST /store/orders/{orderId}/deliver"
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
      const { bin, major } = schemathesis as Exclude<typeof schemathesis, { readonly skip: true }>
      const reportPath = join(workDir, major === 3 ? "report.tar.gz" : "events.ndjson")
      const args = schemathesisArguments(major, {
        schemaUrl: `${server.origin}/v1/openapi.json`,
        // The document's servers end in /v1 and its paths are relative to them.
        baseUrl: `${server.origin}/v1`,
        headers: [`Authorization: Bearer ${key}`],
        maxExamples: 25,
        reportPath
      })
      const { stdout } = await run(bin, args, {
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

      let report: SchemathesisReport
      if (major === 3) {
        await run("tar", ["xzf", reportPath, "-C", workDir])
        report = readReport3(workDir)
      } else {
        report = readReport4(readFileSync(reportPath, "utf8"))
      }
      expect(report.finished, stdout).toBe(true)
      const executions = report.executions

      const checks = executions.flatMap((execution) => execution.checks.map((check) => ({ execution, check })))
      const unexplained = checks
        .filter(({ check }) => check.value !== "success" && explained(check) === undefined)
        .map(({ execution, check }) =>
          `${execution.label}: ${check.name} ${check.value} (${
            check.message ?? ""
          }): ${check.request.method} ${check.request.uri} -> ${check.response?.status_code}`
        )
      expect(unexplained, stdout).toEqual([])
      expect(executions.flatMap((execution) => execution.errors), stdout).toEqual([])

      // It really exercised every operation, and the createPet -> getPet link.
      const tested = new Set(executions.map((execution) => execution.label))
      expect([...tested].filter((name) => !beta.includes(name) && stable.includes(name)).sort()).toEqual(stable)
      // And the beta operations of issue 13, and placeOrder's links to getOrder, cancelOrder and deliverOrder.
      expect([...tested].filter((name) => beta.includes(name)).sort()).toEqual([...beta].sort())
      for (const name of tested) {
        expect(checks.filter(({ execution }) => execution.label === name).length, name).toBeGreaterThan(20)
      }
      // Schemathesis 3 says how many links it followed; 4 runs them in its stateful phase.
      if (major === 3) expect(stdout).toMatch(/Collected API links: 4/)
    },
    300_000
  )
})
