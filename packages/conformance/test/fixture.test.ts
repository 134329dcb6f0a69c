import { once } from "node:events"
import { createServer as createHttpServer } from "node:http"
import { freePort } from "@petstore/test-support"
import { describe, expect, it, onTestFinished } from "vitest"
import { InvalidKeys, InvalidOptions, runSuite, Unreachable } from "../src/index.ts"
import { FIXTURE_CORS_ORIGIN, startFixture } from "./fixture/server.ts"
import { failures, idsWith, keysOf } from "./support/keys.ts"

const start = async (options: Parameters<typeof startFixture>[0] = {}) => {
  const fixture = await startFixture({ recoverySeconds: 1, ...options })
  onTestFinished(() => fixture.close())
  return fixture
}

const DAILY_CHECKS = ["free", "pro", "business", "enterprise"].flatMap((
  plan
) => [`${plan}.daily`, `${plan}.daily-details`])

/** A limited-status check set aside because the window it was to look at had already reopened. */
const isWindowRace = (check: { readonly id: string; readonly reason?: string | undefined }) =>
  check.id.endsWith(".limited-status") &&
  (check.reason ?? "").startsWith("the minute window reset between the 429 and this call")

describe("the suite against the fault-free fixture", () => {
  it("passes every check with keys of every plan and a staff key, and never sends with a key before its Retry-After has passed", async () => {
    const fixture = await start()
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2, pro: 2, business: 2, enterprise: 2 }),
      staffKey: fixture.staffKeys[0],
      // The fixture delivers webhooks to the run's receiver on loopback.
      webhooks: {},
      corsOrigin: FIXTURE_CORS_ORIGIN,
      admin: fixture.admin
    })
    expect(failures(result)).toEqual([])
    // Only the daily checks wait for --daily. A limited-status check may also be set aside when the fixture's
    // one-second window reopened before it asked (a busy machine): the suite says so, and judges nothing.
    const skips = result.results.filter((check) => check.status === "skip")
    expect(skips.filter((check) => !DAILY_CHECKS.includes(check.id) && !isWindowRace(check)).map((check) => check.id))
      .toEqual([])
    // Every key the keys.* checks made through the admin API was revoked.
    expect(fixture.madeKeys()).toEqual([])
    expect(skips.filter((check) => DAILY_CHECKS.includes(check.id)).map((check) => check.id).sort()).toEqual(
      [...DAILY_CHECKS].sort()
    )
    expect(result.summary.passed).toBeGreaterThan(80)
    expect(fixture.earlyRetries()).toBe(0)
    for (const plan of ["free", "pro", "business", "enterprise"]) {
      expect(idsWith(result, "pass")).toEqual(expect.arrayContaining([`${plan}.burst`, `${plan}.recovery`]))
    }
  })

  it("with --only spec runs only the checks the spec mandates, and they pass", async () => {
    const fixture = await start()
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2, pro: 1 }),
      only: "spec"
    })
    expect(failures(result)).toEqual([])
    expect(result.results.every((check) => check.tag === "spec")).toBe(true)
    expect(idsWith(result, "pass")).toEqual(
      expect.arrayContaining(["pets.create", "auth.getPet.unknown", "free.burst", "headers.present"])
    )
  })

  it("passes --only spec against a server without the README's GET /v1/rate_limit, reading enterprise limits from the headers", async () => {
    const fixture = await start({ rateLimitEndpoint: false })
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 1, enterprise: 1 }),
      only: "spec"
    })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(
      expect.arrayContaining(["free.burst", "enterprise.limit", "enterprise.burst", "enterprise.recovery"])
    )
    expect(result.results.find((check) => check.id === "enterprise.daily")?.reason).toContain("daily limit is unknown")
  })

  it("uses a plan's only key for the general checks first and spends its window last", async () => {
    const fixture = await start()
    const result = await runSuite({ baseUrl: fixture.baseUrl, keys: keysOf(fixture, { business: 1 }) })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(
      expect.arrayContaining(["pets.list-limit-100", "business.burst", "business.recovery"])
    )
    expect(fixture.earlyRetries()).toBe(0)
  })

  it("reports the checks of plans without a key as skipped, saying which key to give", async () => {
    const fixture = await start()
    const result = await runSuite({ baseUrl: fixture.baseUrl, keys: keysOf(fixture, { pro: 1 }), grep: "free." })
    expect(result.results.length).toBeGreaterThan(5)
    for (const check of result.results) {
      expect(check.status).toBe("skip")
      expect(check.reason).toContain("no free key given: add free=KEY to the --keys-file, or set CONFORMANCE_KEY_FREE")
    }
  })

  it("with --grep runs only the matching checks, and first the checks they build on", async () => {
    const fixture = await start()
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2 }),
      grep: "free.recovery"
    })
    expect(result.results.map((check) => check.id)).toEqual(["free.recovery"])
    expect(result.results[0]!.status).toBe("pass")
    expect(result.summary).toEqual({ passed: 1, failed: 0, skipped: 0 })
  })

  it("counts a burst that straddles a window boundary against the window each answer reports", async () => {
    let offset = 0
    let requests = 0
    // Halfway through the burst the fixture's clock moves past the end of every window. It moves only then: on the
    // real clock, a burst slower than a minute (a loaded machine) would see a window end by itself as well.
    const startedAt = Date.now()
    const fixture = await start({
      clock: () => startedAt + offset,
      onRequest: () => {
        if (++requests === 30) offset += 61_000
      }
    })
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2 }),
      grep: "free.burst",
      only: "spec"
    })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(["free.burst"])
    expect(fixture.windowsOpened(fixture.keys.free[1]!)).toBe(2)
  })

  it("does not take a minute window that resets between two calls of GET /v1/rate_limit for a call that cost quota", async () => {
    let offset = 0
    let rateLimitCalls = 0
    // The second call arrives in the next window, whose remaining count is whole again.
    const fixture = await start({
      clock: () => Date.now() + offset,
      onRequest: (request) => {
        if (request.url?.startsWith("/v1/rate_limit") && ++rateLimitCalls === 2) offset += 61_000
      }
    })
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2 }),
      grep: "free.rate-limit-endpoint"
    })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(["free.rate-limit-endpoint"])
  })

  it("does not report a key as unlimited when its minute window reset between the 429 and GET /v1/rate_limit", async () => {
    let offset = 0
    const fixture = await start({
      clock: () => Date.now() + offset,
      onRequest: (request) => {
        if (request.url?.startsWith("/v1/rate_limit")) offset += 61_000
      }
    })
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { free: 2 }),
      grep: "free.limited-status"
    })
    expect(failures(result)).toEqual([])
    expect(result.results[0]).toMatchObject({
      id: "free.limited-status",
      status: "skip",
      reason: expect.stringContaining("window reset")
    })
  })

  it("with --daily paces requests under the minute quota until the daily quota binds", async () => {
    const fixture = await start({ minuteSeconds: 2, enterpriseLimits: { perMinute: 5, perDay: 12 } })
    const progress: Array<string> = []
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: keysOf(fixture, { enterprise: 3 }),
      grep: "daily",
      daily: true,
      onProgress: (line) => progress.push(line)
    })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(["enterprise.daily", "enterprise.daily-details"])
    // Paced, not refused: 12 requests at 5 a window take three windows and no minute 429.
    expect(fixture.earlyRetries()).toBe(0)
    expect(progress.some((line) => line.includes("next window"))).toBe(true)
  })
})

describe("the suite's output", () => {
  it("shows a key by its last four characters at most, even when the service echoes it back", async () => {
    const echo = createHttpServer((request, response) => {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ youSent: request.headers.authorization ?? null }))
    }).listen(0, "127.0.0.1")
    await once(echo, "listening")
    onTestFinished(() => void echo.close())
    const key = "psk_echoed_back_by_the_service_7f3e"
    const progress: Array<string> = []
    const reported: Array<unknown> = []
    const result = await runSuite({
      baseUrl: `http://127.0.0.1:${(echo.address() as { port: number }).port}/v1`,
      keys: { free: [key] },
      grep: "pets.",
      onResult: (check) => reported.push(check),
      onProgress: (line) => progress.push(line)
    })
    expect(result.summary.failed).toBeGreaterThan(0)
    const everything = JSON.stringify([result, reported, progress])
    expect(everything).toContain("…7f3e")
    expect(everything).not.toContain(key.slice(0, -4))
  })
})

describe("runSuite refuses to start", () => {
  it("with Unreachable when nothing answers at the base URL", async () => {
    const port = await freePort()
    await expect(runSuite({ baseUrl: `http://127.0.0.1:${port}/v1`, keys: { free: ["fx_free_never_sent_0000"] } }))
      .rejects
      .toBeInstanceOf(Unreachable)
  })

  it("with InvalidOptions for a base URL without /v1 whose /pets is 404", async () => {
    const fixture = await start()
    const error = await runSuite({ baseUrl: fixture.baseUrl.replace(/\/v1$/, ""), keys: keysOf(fixture, { free: 1 }) })
      .catch((error: unknown) => error)
    expect(error).toBeInstanceOf(InvalidOptions)
    expect((error as InvalidOptions).message).toContain("the base URL must include the version segment")
  })

  it("with InvalidOptions without a key", async () => {
    const fixture = await start()
    const error = await runSuite({ baseUrl: fixture.baseUrl, keys: { free: [] } }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(InvalidOptions)
    expect((error as InvalidOptions).message).toContain("no API key given")
  })

  it("with InvalidKeys, before any check, when the service refuses a key", async () => {
    const fixture = await start()
    const checked: Array<string> = []
    const error = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: { free: [fixture.keys.free[0]!, "fx_free_unknown_key_ab12"] },
      onResult: (check) => checked.push(check.id)
    }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(InvalidKeys)
    expect((error as InvalidKeys).refused).toEqual([{
      plan: "free",
      label: "free key 2",
      lastFour: "…ab12",
      status: 401
    }])
    expect(checked).toEqual([])
  })

  it("with InvalidOptions for a base URL that is not http(s)", async () => {
    await expect(runSuite({ baseUrl: "ftp://example.com/v1" })).rejects.toBeInstanceOf(InvalidOptions)
  })
})
