import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runSuite, type SuiteResult } from "../src/index.ts"
import { failures } from "./support/keys.ts"
import { postgresAdminUrl, type RealServer, startRealServer } from "./support/realServer.ts"

/**
 * The keys.* checks against the real server, through its admin API: they pass, and whatever ends the run, no key
 * the run made is left working.
 */
const keyLifeOn = (backend: "pglite" | "postgres") => {
  let server: RealServer | undefined
  beforeAll(async () => {
    server = await startRealServer(backend)
  }, 400_000)
  afterAll(() => server?.stop())

  /** The keys the run made that are still listed, live or expired (a revoked key is in neither list). */
  const leftBy = async (result: SuiteResult) => {
    const names: Array<string> = []
    for (const state of ["live", "expired"]) {
      const answer = await fetch(`${server!.admin.url}/admin/keys?state=${state}`, {
        headers: { authorization: `Bearer ${server!.admin.token}` }
      })
      expect(answer.status).toBe(200)
      for (const key of (await answer.json()) as Array<{ name: string }>) names.push(key.name)
    }
    return names.filter((name) => name.startsWith(`conformance-${result.runId}-`))
  }

  it("passes keys.expiry and keys.rolling, revokes every key it made, and never shows the admin token", async () => {
    const result = await runSuite({
      baseUrl: server!.baseUrl,
      keys: { business: [await server!.createKey("business")] },
      grep: "keys.",
      admin: server!.admin
    })
    expect(failures(result), server!.output()).toEqual([])
    expect(result.results.map((check) => `${check.id} ${check.status}`)).toEqual([
      "keys.expiry pass",
      "keys.rolling pass"
    ])
    expect(await leftBy(result)).toEqual([])
    expect(JSON.stringify(result)).not.toContain(server!.admin.token)
  }, 240_000)

  it("revokes the keys it made when the run is stopped in the middle of the checks", async () => {
    let expiryChecked: () => void = () => {}
    const expiryDone = new Promise<void>((resolve) => (expiryChecked = resolve))
    const result = await runSuite({
      baseUrl: server!.baseUrl,
      keys: { business: [await server!.createKey("business")] },
      grep: "keys.",
      admin: server!.admin,
      onResult: (check) => check.id === "keys.expiry" && expiryChecked(),
      // keys.rolling has made its key and rolled it by then: it waits out a 15 s overlap.
      stop: Effect.promise(() => expiryDone).pipe(Effect.andThen(Effect.sleep(3_000)), Effect.as("stopped by the test"))
    })
    expect(result.results.map((check) => `${check.id} ${check.status}`)).toEqual(["keys.expiry pass"])
    expect(result.incomplete).toEqual({ reason: "stopped by the test", notRun: 1 })
    expect(await leftBy(result)).toEqual([])
  }, 240_000)

  it("fails with the admin token refused, naming the cause and never the token", async () => {
    const wrong = "not-the-admin-token-0123456789"
    const refused = await runSuite({
      baseUrl: server!.baseUrl,
      keys: { business: [await server!.createKey("business")] },
      grep: "keys.",
      admin: { url: server!.admin.url, token: wrong }
    }).then(() => undefined, (error: Error) => error.message)
    expect(refused).toContain(`the admin API at ${server!.admin.url} refused the admin token (401)`)
    expect(refused).not.toContain(wrong)
  }, 120_000)
}

describe("the keys.* checks against the real server on PGlite", () => keyLifeOn("pglite"))

// With CI=true a missing DATABASE_URL fails the run (startRealServer throws) rather than skipping it.
describe.runIf(postgresAdminUrl !== undefined || process.env.CI === "true")(
  "the keys.* checks against the real server on PostgreSQL",
  () => keyLifeOn("postgres")
)
