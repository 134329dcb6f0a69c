import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { ADMIN_TOKEN, bearer, send } from "@petstore/test-support"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

/** The committed document, as the contract's package exports it. */
const committed = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve("@petstore/contract/openapi.admin.json"), "utf8")
)

describe("the admin API's OpenAPI document on the admin listener", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer("pglite")
  })
  afterAll(() => server?.stop())

  it("answers GET /admin/openapi.json with the admin token: the contract's committed openapi.admin.json", async () => {
    for (const _ of [1, 2]) {
      const answer = await fetch(`${server.adminUrl}/admin/openapi.json`, { headers: bearer(ADMIN_TOKEN) })
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
      expect(answer.headers.get("cache-control")).toBe("no-store")
      expect(answer.headers.get("x-request-id")).toEqual(expect.any(String))
      expect(await answer.json()).toEqual(committed)
    }
  })

  it("answers 401 with the admin realm's challenge without the token, or with a wrong one", async () => {
    const without = await send(`${server.adminUrl}/admin/openapi.json`)
    expectError(without, 401, "unauthorized")
    expect(without.headers.get("www-authenticate")).toBe(`Bearer realm="petstore-admin"`)
    const wrong = await send(`${server.adminUrl}/admin/openapi.json`, { headers: bearer("wrong-token-wrong-token") })
    expectError(wrong, 401, "unauthorized")
    expect(wrong.headers.get("www-authenticate")).toBe(`Bearer realm="petstore-admin", error="invalid_token"`)
  })

  it("is not served on the public listener", async () => {
    const answer = await send(`${new URL(server.baseUrl).origin}/admin/openapi.json`, { headers: bearer(ADMIN_TOKEN) })
    expect(answer.status).toBe(404)
  })
})
