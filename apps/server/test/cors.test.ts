/**
 * CORS (docs/security.md, "Calling the API from a browser (CORS)"): off by default; with `CORS_ALLOWED_ORIGINS`, a
 * preflight from an allowed origin is answered before quota and key, and actual answers to it say so. A
 * preflight spends no quota whatever its origin.
 */
import { type Answer, bearer, json, send } from "@petstore/test-support"
import { Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseAllowedOrigins } from "../src/net/corsOrigins.ts"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

const ALLOWED = "http://app.example:3000"
const OTHER = "http://evil.example"

const preflight = (url: string, origin: string, method: string, headers = "authorization") =>
  send(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers }
  })

const listOf = (answer: Answer, name: string) =>
  (answer.headers.get(name) ?? "").split(",").map((part) => part.trim().toLowerCase()).filter((part) => part !== "")

const corsHeadersOf = (answer: Answer) =>
  [...answer.headers.keys()].filter((name) => name.startsWith("access-control-"))

/** Preflights spend nothing: with an anonymous limit of 2, more preflights than that leave it whole. */
const expectNoQuotaSpent = async (server: RunningServer, origin: string) => {
  for (let i = 0; i < 4; i++) {
    const answer = await preflight(`${server.baseUrl}/pets`, origin, "GET")
    expect(answer.status).toBe(204)
    expect(answer.headers.get("x-ratelimit-remaining")).toBeNull()
  }
  // The anonymous quota is still there: a request without a key is refused for its key, not its quota.
  expectError(await send(`${server.baseUrl}/pets`), 401, "unauthorized")
  expectError(await send(`${server.baseUrl}/pets`), 401, "unauthorized")
  expectError(await send(`${server.baseUrl}/pets`), 429, "rate_limited")
}

describe("CORS_ALLOWED_ORIGINS", () => {
  it.each([
    ["", "None"],
    ["*", "Any"],
    [" https://App.Example , http://127.0.0.1:5173,http://[::1]:8080 ", "Listed"]
  ])("%j is read as %s", (value, tag) => {
    expect(Result.getOrThrow(parseAllowedOrigins(value))._tag).toBe(tag)
  })

  it("keeps origins as browsers serialise them", () => {
    const parsed = Result.getOrThrow(parseAllowedOrigins("https://App.Example,http://127.0.0.1:5173"))
    expect(parsed._tag === "Listed" && [...parsed.origins]).toEqual(["https://app.example", "http://127.0.0.1:5173"])
  })

  it.each(["https://app.example/", "https://app.example/path", "app.example", "https://", "https://a.example,", "*,*"])(
    "refuses %j",
    (value) => {
      expect(Result.isFailure(parseAllowedOrigins(value))).toBe(true)
    }
  )
})

describe("CORS with allowed origins", () => {
  let server: RunningServer
  let key: string
  const url = (path: string) => `${server.baseUrl}${path}`

  beforeAll(async () => {
    server = await startServer("pglite", {
      corsAllowedOrigins: `${ALLOWED}, http://other-app.example`,
      anonymousPerMinute: 2
    })
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it("a preflight from an allowed origin: 204 with the route's methods and request headers, before quota and key", async () => {
    const answer = await preflight(url("/pets"), ALLOWED, "POST", "authorization, content-type, idempotency-key")
    expect(answer.status).toBe(204)
    expect(answer.text).toBe("")
    expect(answer.headers.get("access-control-allow-origin")).toBe(ALLOWED)
    expect(listOf(answer, "access-control-allow-methods")).toEqual(["get", "post", "head"])
    expect(listOf(answer, "access-control-allow-headers")).toEqual(
      expect.arrayContaining(["authorization", "content-type", "idempotency-key", "x-request-id"])
    )
    expect(answer.headers.get("access-control-max-age")).toBe("600")
    expect(listOf(answer, "vary")).toContain("origin")
    expect(answer.headers.get("x-request-id")).toMatch(/./)
    expect(answer.headers.get("www-authenticate")).toBeNull()

    const onePet = await preflight(url("/pets/1"), ALLOWED, "PATCH", "authorization, content-type, if-match")
    expect(onePet.status).toBe(204)
    expect(listOf(onePet, "access-control-allow-methods")).toEqual(["get", "patch", "delete", "head"])
    expect(listOf(onePet, "access-control-allow-headers")).toEqual(
      expect.arrayContaining(["authorization", "content-type", "if-match"])
    )
  })

  it("a preflight from an origin not allowed, or to an unknown path: 204 without CORS headers", async () => {
    for (
      const answer of [await preflight(url("/pets"), OTHER, "GET"), await preflight(url("/nowhere"), ALLOWED, "GET")]
    ) {
      expect(answer.status).toBe(204)
      expect(corsHeadersOf(answer)).toEqual([])
    }
  })

  it("preflights, allowed or not, spend no quota", async () => {
    await expectNoQuotaSpent(server, OTHER)
  })

  it("answers to an allowed origin carry Access-Control-Allow-Origin and expose what a client reads", async () => {
    const created = await send(url("/pets"), {
      method: "POST",
      headers: { ...json(key), origin: ALLOWED },
      body: JSON.stringify({ name: "Cors", categoryId: 1 })
    })
    expect(created.status).toBe(201)
    expect(created.headers.get("access-control-allow-origin")).toBe(ALLOWED)
    expect(listOf(created, "vary")).toContain("origin")
    expect(listOf(created, "access-control-expose-headers")).toEqual(expect.arrayContaining([
      "x-ratelimit-limit",
      "x-ratelimit-remaining",
      "x-ratelimit-reset",
      "ratelimit",
      "ratelimit-policy",
      "retry-after",
      "location",
      "link",
      "etag",
      "x-request-id"
    ]))
    // Errors too, so that a page can read why it was refused.
    const refused = await send(url("/pets/999999"), { headers: { origin: ALLOWED, ...bearer(key) } })
    expectError(refused, 404, "not_found")
    expect(refused.headers.get("access-control-allow-origin")).toBe(ALLOWED)
  })

  it("answers to an origin not allowed, or without one, are as without CORS", async () => {
    for (const headers of [{ ...bearer(key), origin: OTHER }, bearer(key)]) {
      const answer = await send(url("/pets?limit=1"), { headers })
      expect(answer.status).toBe(200)
      expect(corsHeadersOf(answer)).toEqual([])
    }
  })

  it("OPTIONS that is no preflight is answered as before: 405", async () => {
    expectError(await send(url("/pets"), { method: "OPTIONS", headers: bearer(key) }), 405, "method_not_allowed")
    expectError(
      await send(url("/pets"), { method: "OPTIONS", headers: { ...bearer(key), origin: ALLOWED } }),
      405,
      "method_not_allowed"
    )
  })
})

describe("CORS off (the default)", () => {
  let server: RunningServer
  let key: string

  beforeAll(async () => {
    server = await startServer("pglite", { anonymousPerMinute: 2 })
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it("a preflight is 204 without CORS headers, and spends no quota", async () => {
    const answer = await preflight(`${server.baseUrl}/pets`, ALLOWED, "GET")
    expect(answer.status).toBe(204)
    expect(corsHeadersOf(answer)).toEqual([])
    await expectNoQuotaSpent(server, ALLOWED)
  })

  it("answers carry no CORS headers", async () => {
    const answer = await send(`${server.baseUrl}/pets?limit=1`, { headers: { ...bearer(key), origin: ALLOWED } })
    expect(answer.status).toBe(200)
    expect(corsHeadersOf(answer)).toEqual([])
  })
})

describe("CORS_ALLOWED_ORIGINS=*", () => {
  let server: RunningServer
  let key: string

  beforeAll(async () => {
    server = await startServer("pglite", { corsAllowedOrigins: "*" })
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it("allows every origin with *, the same answer for each", async () => {
    const answer = await preflight(`${server.baseUrl}/pets`, OTHER, "GET")
    expect(answer.headers.get("access-control-allow-origin")).toBe("*")
    const actual = await send(`${server.baseUrl}/pets?limit=1`, { headers: { ...bearer(key), origin: OTHER } })
    expect(actual.headers.get("access-control-allow-origin")).toBe("*")
    expect(listOf(actual, "vary")).not.toContain("origin")
  })
})
