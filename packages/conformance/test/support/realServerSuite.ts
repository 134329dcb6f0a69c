import { afterAll, beforeAll, expect, it } from "vitest"
import { type Plan, runSuite } from "../../src/index.ts"
import { failures } from "./keys.ts"
import { type Deployment, type RealServer, startRealServer } from "./realServer.ts"

/**
 * The whole suite against the real server with two keys of every plan, the
 * second set aside to spend its windows while the general checks run, and a
 * staff key for the store checks, and the admin API for the keys.* checks: every check passes, only the daily ones
 * (which need --daily) are skipped.
 */
/** A browser origin the server allows (CORS_ALLOWED_ORIGINS), so that the suite's cors.* checks run too. */
const CORS_ORIGIN = "https://conformance.example"

export const conformsOn = (backend: "pglite" | "postgres", deployment?: Deployment) => {
  let server: RealServer | undefined
  beforeAll(async () => {
    server = await startRealServer(backend, deployment, { CORS_ALLOWED_ORIGINS: CORS_ORIGIN })
  }, 400_000)
  afterAll(() => server?.stop())

  it("passes every check of the suite with keys of every plan", async () => {
    const keys: Partial<Record<Plan, Array<string>>> = {}
    const progress: Array<string> = []
    for (const plan of ["free", "pro", "business"] as const) {
      keys[plan] = [await server!.createKey(plan), await server!.createKey(plan)]
    }
    const limits = { perMinute: 120, perDay: 5_000 }
    keys.enterprise = [await server!.createKey("enterprise", limits), await server!.createKey("enterprise", limits)]

    const staffKey = await server!.createKey("business", undefined, "staff")

    const result = await runSuite({
      baseUrl: server!.baseUrl,
      keys,
      staffKey,
      corsOrigin: CORS_ORIGIN,
      admin: server!.admin,
      onProgress: (line) => progress.push(line)
    })
    // The one-winner race, as the suite reported it.
    console.info(progress.filter((line) => line.startsWith("store: race")).join("\n"))
    expect(failures(result), server!.output()).toEqual([])
    // The events checks run only when the server's document has /events.
    const skips = result.results.filter((check) => check.status === "skip")
    expect(
      skips.filter((check) =>
        !check.id.endsWith(".daily") && !check.id.endsWith(".daily-details") &&
        !(check.id.startsWith("events.") && (check.reason ?? "").includes("has no /events")) &&
        // realServer.webhooks.system.test.ts runs them, with a server that may deliver to loopback.
        !(check.id.startsWith("webhooks.") && (check.reason ?? "").includes("--webhooks"))
      ).map((check) => check.id)
    ).toEqual([])
    expect(result.summary.passed).toBeGreaterThan(80)
    // The schema-driven phase ran, and the server's own document judged the responses of the whole run.
    expect(result.fuzz?.sent).toBeGreaterThan(50)
    expect(result.openapi?.url).toBe(`${server!.baseUrl}/openapi.json`)
    expect(result.openapi?.checked).toBeGreaterThan(1000)
  })
}
