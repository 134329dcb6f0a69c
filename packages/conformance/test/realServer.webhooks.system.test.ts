import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runSuite } from "../src/index.ts"
import { failures } from "./support/keys.ts"
import { postgresAdminUrl, type RealServer, startRealServer } from "./support/realServer.ts"

/**
 * `--webhooks` against the real server, which delivers to the run's receiver on loopback over http because
 * both of its URL policies are relaxed here, as an operator would for a test deployment.
 */
const receivesOn = (backend: "pglite" | "postgres") => {
  let server: RealServer | undefined
  beforeAll(async () => {
    server = await startRealServer(backend, undefined, {
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true"
    })
  }, 180_000)
  afterAll(() => server?.stop())

  it("passes every webhooks check", async () => {
    const result = await runSuite({
      baseUrl: server!.baseUrl,
      keys: { business: [await server!.createKey("business")] },
      grep: "webhooks.",
      webhooks: {}
    })
    expect(failures(result), server!.output()).toEqual([])
    expect(result.results.map((check) => `${check.id} ${check.status}`)).toEqual([
      "webhooks.register pass",
      "webhooks.headers pass",
      "webhooks.signature pass",
      "webhooks.payloads pass",
      "webhooks.retry-same-id pass",
      "webhooks.gone-disables pass",
      "webhooks.events-catch-up pass",
      "webhooks.delete pass"
    ])
  }, 240_000)

  it(
    "fails registration, naming the URL policies to look at, when the deployment refuses the receiver's URL",
    async () => {
      // A URL every deployment refuses (credentials in it): the failure still names the policies to look at.
      const result = await runSuite({
        baseUrl: server!.baseUrl,
        keys: { business: [await server!.createKey("business")] },
        grep: "webhooks.register",
        webhooks: { publicUrl: "http://user:pw@192.0.2.1" }
      })
      const [register] = result.results
      expect(register?.status).toBe("fail")
      expect(register?.failure?.received).toContain("WEBHOOK_ALLOW_HTTP")
    },
    60_000
  )
}

describe("--webhooks against the real server on PGlite", () => receivesOn("pglite"))

// With CI=true a missing DATABASE_URL fails the run (startRealServer throws) rather than skipping it.
describe.runIf(postgresAdminUrl !== undefined || process.env.CI === "true")(
  "--webhooks against the real server on PostgreSQL",
  () => receivesOn("postgres")
)
