/**
 * Every error answer carries its request's id in the body (`requestId`), equal to its `X-Request-Id`:
 * whoever answered it, an operation, a middleware, the router, or neither listener's routes.
 */
import { makePetstoreClient, NotFound } from "@petstore/contract"
import { ADMIN_TOKEN, bearer, json, send } from "@petstore/test-support"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError, sendRaw } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

describe("requestId in every error body", () => {
  let server: RunningServer
  let key: string
  const url = (path: string) => `${server.baseUrl}${path}`
  const origin = () => new URL(server.baseUrl).origin

  beforeAll(async () => {
    server = await startServer("pglite")
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it.each<[string, () => Promise<Parameters<typeof expectError>[0]>, number, string]>([
    ["400 of the request's shape", () => send(url("/pets?limit=0"), { headers: bearer(key) }), 400, "invalid_request"],
    ["401 of the auth middleware", () => send(url("/pets")), 401, "unauthorized"],
    ["401 of an unknown key", () => send(url("/pets"), { headers: bearer("psk_unknown") }), 401, "unauthorized"],
    ["404 of an operation", () => send(url("/pets/999999"), { headers: bearer(key) }), 404, "not_found"],
    ["404 of an unknown /v1 path", () => send(url("/nowhere"), { headers: bearer(key) }), 404, "not_found"],
    ["404 outside /v1", () => send(`${origin()}/nowhere`), 404, "not_found"],
    [
      "405 of a known path",
      () => send(url("/pets"), { method: "PUT", headers: bearer(key) }),
      405,
      "method_not_allowed"
    ],
    [
      "413 of a body over the limit",
      () =>
        send(url("/pets"), { method: "POST", headers: json(key), body: JSON.stringify({ name: "x".repeat(20_000) }) }),
      413,
      "payload_too_large"
    ],
    [
      "415 of a body that is not JSON",
      () =>
        send(url("/pets"), {
          method: "POST",
          headers: { ...bearer(key), "content-type": "text/plain" },
          body: "{}"
        }),
      415,
      "unsupported_media_type"
    ],
    [
      "400 of a target refused before any route",
      () => sendRaw(origin(), { method: "GET", path: "/v1/pets", headers: { host: "bad host!" } }),
      400,
      "invalid_request"
    ],
    ["401 of the admin listener", () => send(`${server.adminUrl}/admin/keys`), 401, "unauthorized"],
    [
      "404 of the admin listener",
      () => send(`${server.adminUrl}/admin/nowhere`, { headers: bearer(ADMIN_TOKEN) }),
      404,
      "not_found"
    ]
  ])("%s", async (_, request, status, code) => {
    const answer = await request()
    expectError(answer, status, code)
    expect(answer.body.requestId).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("429 of quota admission, and the client's own X-Request-Id when it sent a sane one", async () => {
    const limited = (await server.createKey("enterprise", { perMinute: 1, perDay: 100 })).key
    await send(url("/pets"), { headers: bearer(limited) })
    const refused = await send(url("/pets"), { headers: { ...bearer(limited), "x-request-id": "ticket-4711" } })
    expectError(refused, 429, "rate_limited")
    expect(refused.body.requestId).toBe("ticket-4711")
  })

  it("a success carries no requestId in its body", async () => {
    const answer = await send(url("/pets?limit=1"), { headers: bearer(key) })
    expect(answer.status).toBe(200)
    expect(answer.text).not.toContain("requestId")
  })

  it("the typed client decodes it into the contract's error class", async () => {
    const error = await makePetstoreClient({ baseUrl: server.baseUrl, apiKey: key }).pipe(
      Effect.flatMap((client) => Effect.flip(client.getPet(999_999))),
      Effect.provide(FetchHttpClient.layer),
      Effect.runPromise
    )
    expect(error).toBeInstanceOf(NotFound)
    expect((error as NotFound).requestId).toMatch(/^[0-9a-f-]{36}$/)
  })
})
