import { spawn } from "node:child_process"
import { once } from "node:events"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { type AddressInfo, createServer as createTcpServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

/**
 * A zoo of broken deployments, each a real server on a free loopback port, and the command line run against each
 * as QA runs it: whatever the target does, the run ends with a verdict naming the cause, and writes its reports.
 * The runs are bounded by the CLI's own options; the tests' timeouts only catch a hang.
 */

const cli = fileURLToPath(new URL("../src/cli.ts", import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), "conformance-zoo-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Catches a run that does not end; never a judgement of how fast the machine is. */
const HANG_GUARD_MILLIS = 300_000

const KEYS = ["free=zoo_free_key_0001", "pro=zoo_pro_key_0002", "staff=zoo_staff_key_0003"]

type Handler = (request: IncomingMessage, response: ServerResponse) => void

const servers: Array<Server | ReturnType<typeof createHttpServer>> = []
afterAll(async () => {
  for (const server of servers) {
    server.close()
    ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
  }
})

const listen = async (server: Server | ReturnType<typeof createHttpServer>) => {
  servers.push(server)
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
}

/** An HTTP target that answers every request with `handler`. */
const httpTarget = (handler: Handler) => listen(createHttpServer(handler))

/** A TCP target for what node:http cannot be made to do: accepting and never answering, trickling, closing. */
const tcpTarget = (onConnection: (socket: Socket) => void) =>
  listen(createTcpServer((socket) => {
    socket.on("error", () => {})
    onConnection(socket)
  }))

const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

const TARGETS: Record<string, () => Promise<string>> = {
  // The most basic broken deployment: 200 [] to everything, and no quota at all.
  "never limits": () => httpTarget((_request, response) => json(response, 200, [])),
  "always answers 500": () =>
    httpTarget((_request, response) => json(response, 500, { code: "internal", message: "down", status: 500 })),
  "always answers 429": () =>
    httpTarget((_request, response) =>
      json(response, 429, { code: "rate_limited", message: "slow down", status: 429 }, { "retry-after": "1" })
    ),
  "never answers": () => tcpTarget(() => {}),
  "closes every connection": () => tcpTarget((socket) => socket.destroy()),
  "answers one byte a second": () =>
    tcpTarget((socket) => {
      const answer = Buffer.from("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]")
      let sent = 0
      const timer = setInterval(() => {
        if (socket.destroyed || sent === answer.length) return clearInterval(timer)
        socket.write(answer.subarray(sent, ++sent))
      }, 1000)
      socket.on("close", () => clearInterval(timer))
    }),
  "answers a huge body": () =>
    httpTarget((_request, response) => {
      // An endless JSON array of pets: the suite must stop reading, not fill its memory.
      response.writeHead(200, { "content-type": "application/json" })
      const pets = `[${`{"id":1,"name":"rex","categoryId":1,"status":"available"},`.repeat(16_384)}`
      const more = () => {
        while (!response.destroyed && response.write(pets));
      }
      response.on("drain", more)
      more()
    }),
  "answers every request after 2 s": () =>
    httpTarget((_request, response) => {
      setTimeout(() => json(response, 200, []), 2000)
    }),
  "redirects": () =>
    httpTarget((request, response) => {
      response.writeHead(302, { location: `http://127.0.0.1:1${request.url ?? "/"}` })
      response.end()
    })
}

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  readonly reports: { readonly json: string; readonly junit: string; readonly html: string }
}

let runs = 0
/** The CLI in its own process, as a user runs it, with every report asked for and small bounds. */
const conformance = (
  baseUrl: string,
  args: ReadonlyArray<string>,
  options: {
    readonly onStdout?: (stdout: string, child: ReturnType<typeof spawn>) => void
    readonly env?: Record<string, string>
  } = {}
) => {
  const directory = join(scratch, `run-${++runs}`)
  rmSync(directory, { recursive: true, force: true })
  const keysFile = join(scratch, `keys-${runs}.txt`)
  writeFileSync(keysFile, `${KEYS.join("\n")}\n`)
  const reports = {
    json: join(scratch, `report-${runs}.json`),
    junit: join(scratch, `report-${runs}.xml`),
    html: join(scratch, `report-${runs}.html`)
  }
  const child = spawn(process.execPath, [
    cli,
    "--base-url",
    baseUrl,
    "--keys-file",
    keysFile,
    "--seed",
    "1",
    "--json",
    reports.json,
    "--junit",
    reports.junit,
    "--html",
    reports.html,
    ...args
  ], { env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...options.env }, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => {
    stdout += chunk
    options.onStdout?.(stdout, child)
  })
  child.stderr.on("data", (chunk) => (stderr += chunk))
  return once(child, "exit").then(([code]): Run => ({ code: code as number | null, stdout, stderr, reports }))
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? ""

/** The reports exist and agree with the summary line; the JSON one says whether the run was complete. */
const expectReports = (run: Run) => {
  for (const path of Object.values(run.reports)) expect(existsSync(path), path).toBe(true)
  const report = JSON.parse(readFileSync(run.reports.json, "utf8"))
  const { passed, failed, skipped } = report.summary
  expect(lastLine(run.stdout)).toMatch(new RegExp(`^${passed} passed, ${failed} failed, ${skipped} skipped`))
  expect(readFileSync(run.reports.junit, "utf8")).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /)
  expect(readFileSync(run.reports.html, "utf8")).toContain("<h1>Animal Adoption Store Service: conformance report</h1>")
  return report
}

/**
 * Small bounds, so that a target which stalls every check still ends the run within a minute or so. A target that
 * fails each check at once ends well before them; they are wide enough for that on a busy machine.
 */
const BOUNDED = ["--request-timeout", "3s", "--check-timeout", "60s", "--max-duration", "120s", "--fuzz", "5"] as const

describe.concurrent("a run against a broken deployment ends with a verdict and its reports", () => {
  it("never limits: each plan's burst fails after a bounded number of requests, saying no 429 came", {
    timeout: HANG_GUARD_MILLIS
  }, async () => {
    const run = await conformance(await TARGETS["never limits"]!(), BOUNDED)
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(
      /FAIL {2}spec {6}free: 60 requests in a minute are admitted, the next is refused with 429 \[free\.burst\]\n.*\n {8}expected: status 429 for request 61 of the window: the quota is 60 a minute\n {8}received: admitted as well, none of the 61 refused: 200 OK/
    )
    expect(run.stdout).toMatch(/FAIL {2}spec {6}pro: 300 requests in a minute .*\[pro\.burst\]/)
    const report = expectReports(run)
    expect(report.complete).toBe(true)
  })

  it("always answers 500: checks fail naming the 500", { timeout: HANG_GUARD_MILLIS }, async () => {
    const run = await conformance(await TARGETS["always answers 500"]!(), BOUNDED)
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(/FAIL .*\n(?: .*\n)* {8}received: .*500 Internal Server Error/)
    expectReports(run)
  })

  it("always answers 429: checks fail on the refusals, and the run ends within --max-duration", {
    timeout: HANG_GUARD_MILLIS
  }, async () => {
    // Every request waits out Retry-After three times before its check sees the 429: only the bound ends the run.
    const run = await conformance(
      await TARGETS["always answers 429"]!(),
      BOUNDED.map((bound) => (bound === "120s" ? "20s" : bound === "60s" ? "10s" : bound))
    )
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(/FAIL .*\n(?: .*\n)* {8}received: .*429 Too Many Requests/)
    expect(lastLine(run.stdout)).toMatch(/; incomplete: \d+ not run \(--max-duration \(20 s\) ran out\)$/)
    const report = expectReports(run)
    expect(report.complete).toBe(false)
  })

  for (
    const [name, cause] of [
      ["never answers", "no answer in time (the request timed out)"],
      ["closes every connection", "the connection was reset before any answer (ECONNRESET)"],
      ["answers one byte a second", "no answer in time (the request timed out)"],
      ["answers a huge body", "the body is over 8 MiB (decoded), more than the suite reads"]
    ] as const
  ) {
    it(`${name}: service.answers fails naming the cause, and nothing else runs`, {
      timeout: HANG_GUARD_MILLIS
    }, async () => {
      // Eight MiB in a request's time even on a busy machine: the cut-off, not the timeout, must end that answer.
      const bounds = name === "answers a huge body"
        ? BOUNDED.map((bound) => (bound === "3s" ? "60s" : bound))
        : BOUNDED
      const run = await conformance(await TARGETS[name]!(), bounds)
      expect(run.code, run.stderr).toBe(1)
      expect(run.stdout).toContain("FAIL  spec      the service answers HTTP at the base URL [service.answers]")
      expect(run.stdout).toContain(`received: ${cause}`)
      expect(lastLine(run.stdout)).toMatch(
        /^0 passed, 1 failed, 0 skipped; incomplete: \d+ not run \(the service gave no HTTP answer, so no check could run\)$/
      )
      const report = expectReports(run)
      expect(report.complete).toBe(false)
      expect(readFileSync(run.reports.junit, "utf8")).toContain("<error message=\"the run ended before every check ran")
    })
  }

  it("answers every request after 2 s: a check that needs many requests fails at --check-timeout, saying so", {
    timeout: HANG_GUARD_MILLIS
  }, async () => {
    // The check's bound must be the one that ends it, never a request's: at load 40, with the other targets sharing
    // this worker's event loop, a 2 s answer came after the 3 s request timeout and service.answers failed on it.
    const run = await conformance(
      await TARGETS["answers every request after 2 s"]!(),
      BOUNDED.map((bound) => (bound === "120s" ? "30s" : bound === "60s" ? "8s" : bound === "3s" ? "60s" : bound))
    )
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(
      /FAIL .*\n {8}expected: the check to end within 8 s \(--check-timeout\)\n {8}received: it had not ended/
    )
    const report = expectReports(run)
    expect(report.complete).toBe(false)
  })

  it("redirects: checks fail naming the 302 and where it points", { timeout: HANG_GUARD_MILLIS }, async () => {
    const run = await conformance(await TARGETS["redirects"]!(), BOUNDED)
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(
      /FAIL .*\n(?: .*\n)* {8}received: 302 Found, location: http:\/\/127\.0\.0\.1:1\/v1\/pets/
    )
    expectReports(run)
  })
})

describe("a run given an admin URL that is not a working admin API", () => {
  const token = "zoo-admin-token-never-printed-0001"
  for (
    const [name, admin, cause] of [
      [
        "answers 404",
        () =>
          httpTarget((_request, response) => json(response, 404, { code: "not_found", message: "no", status: 404 })),
        /no admin API at http:\/\/127\.0\.0\.1:\d+ \(GET \/admin\/audit answered 404\): --admin-url is the admin listener's address/
      ],
      [
        "refuses the token",
        () =>
          httpTarget((_request, response) =>
            json(response, 401, { code: "unauthorized", message: "no", status: 401 }, {
              "www-authenticate": "Bearer realm=\"petstore-admin\", error=\"invalid_token\""
            })
          ),
        /the admin API at http:\/\/127\.0\.0\.1:\d+ refused the admin token \(401\)/
      ],
      ["never answers", () => tcpTarget(() => {}), /cannot reach the admin API at .*: no answer in time/]
    ] as const
  ) {
    it(`${name}: exits 2 before any check, naming the cause and never the token`, {
      timeout: HANG_GUARD_MILLIS
    }, async () => {
      const adminUrl = (await admin()).replace(/\/v1$/, "")
      const run = await conformance(await TARGETS["never limits"]!(), [...BOUNDED, "--admin-url", adminUrl], {
        env: { CONFORMANCE_ADMIN_TOKEN: token }
      })
      expect(run.code, run.stderr).toBe(2)
      expect(run.stderr).toMatch(cause)
      expect(run.stdout).not.toMatch(/^(PASS|FAIL|SKIP) /m)
      expect(run.stdout + run.stderr).not.toContain(token)
    })
  }
})

describe("a run stopped by a signal", () => {
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    it(
      `${signal}: writes every report with what was checked, marked incomplete, prints the summary and exits ${code}`,
      {
        timeout: HANG_GUARD_MILLIS
      },
      async () => {
        // A target that keeps every check waiting on Retry-After: without the signal the run would go on for minutes.
        const baseUrl = await TARGETS["always answers 429"]!()
        let sent = false
        const run = await conformance(baseUrl, ["--fuzz", "5"], {
          onStdout: (stdout, child) => {
            if (!sent && /^(PASS|FAIL|SKIP) /m.test(stdout)) {
              sent = true
              child.kill(signal)
            }
          }
        })
        expect(sent).toBe(true)
        expect(run.code, run.stderr).toBe(code)
        expect(lastLine(run.stdout)).toMatch(
          new RegExp(
            `^\\d+ passed, \\d+ failed, \\d+ skipped; incomplete: \\d+ not run \\(interrupted by ${signal}\\)$`
          )
        )
        const report = expectReports(run)
        expect(report.complete).toBe(false)
        expect(report.incomplete.reason).toBe(`interrupted by ${signal}`)
        expect(report.incomplete.notRun).toBeGreaterThan(0)
        expect(report.results.length).toBeGreaterThan(0)
        expect(readFileSync(run.reports.junit, "utf8")).toContain(`interrupted by ${signal}`)
        expect(readFileSync(run.reports.html, "utf8")).toContain(`Incomplete: interrupted by ${signal}`)
      }
    )
  }
})
