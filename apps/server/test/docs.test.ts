import { spawnSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { documentServers } from "../src/http/openApiServers.ts"
import { send, serverEntry } from "@petstore/test-support"
import { type RunningServer, startServer } from "./support/testServer.ts"
import { Option } from "effect"
import { settings } from "./support/settings.ts"

describe("documentation and links", () => {
  let server: RunningServer
  const origin = () => server.baseUrl.replace(/\/v1$/, "")

  beforeAll(async () => {
    server = await startServer("pglite", { publicBaseUrl: Option.some(new URL("https://pets.example.test/base")) })
  })
  afterAll(() => server?.stop())

  it("serves the OpenAPI 3.1 document at /v1/openapi.json without a key", async () => {
    const answer = await send(`${server.baseUrl}/openapi.json`)
    expect(answer.status).toBe(200)
    expect(answer.body.openapi).toMatch(/^3\.1/)
    // Paths are relative to the servers, which end in /v1 (spec §1).
    expect(answer.body.paths["/pets/{petId}"].get.deprecated).toBe(true)
  })

  it("names PUBLIC_BASE_URL + /v1 as the document's server when OPENAPI_SERVERS is unset", async () => {
    const answer = await send(`${server.baseUrl}/openapi.json`)
    expect(answer.body.servers).toEqual([{ url: "https://pets.example.test/base/v1", description: "PUBLIC_BASE_URL" }])
  })

  it("serves the API reference page at /docs without a key, with no third-party script, to first visits at once", async () => {
    // The page is built on its first visit: visits that arrive together while it is built all get it.
    const answers = await Promise.all(Array.from({ length: 4 }, () => send(`${origin()}/docs`)))
    for (const answer of answers) {
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/)
      expect(answer.text).toContain("Scalar.createApiReference")
      expect(answer.text).not.toMatch(/<script[^>]+src="https?:/)
    }
  })

  it("answers /favicon.ico, which browsers ask for beside the page: 204, kept a day, spending no quota", async () => {
    const answer = await send(`${origin()}/favicon.ico`)
    expect(answer.status).toBe(204)
    expect(answer.text).toBe("")
    expect(answer.headers.get("cache-control")).toBe("public, max-age=86400")
    expect(answer.headers.get("x-ratelimit-limit")).toBeNull()
  })

  it("builds Link URLs from PUBLIC_BASE_URL when it is set", async () => {
    const { key } = await server.createKey("business")
    for (let i = 0; i < 3; i++) {
      await send(`${server.baseUrl}/pets`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `Linked ${i}`, categoryId: 1 })
      })
    }
    const page = await send(`${server.baseUrl}/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    expect(page.headers.get("link")).toMatch(
      /^<https:\/\/pets\.example\.test\/base\/v1\/pets\?limit=1&cursor=[^>]+>; rel="next"$/
    )
  })
})

describe("the servers of the OpenAPI document", () => {
  it("come from OPENAPI_SERVERS, with their descriptions; else PUBLIC_BASE_URL + /v1; else the served origin (/v1)", () => {
    const servers = "https://pets.example.com/v1 Production, https://staging.pets.example.com/v1   Staging (EU)"
    expect(
      documentServers(Option.some(settings.openApiServers(servers)), Option.some(new URL("https://ignored.example")))
    ).toEqual([
      { url: "https://pets.example.com/v1", description: "Production" },
      { url: "https://staging.pets.example.com/v1", description: "Staging (EU)" }
    ])
    expect(documentServers(Option.none(), Option.some(new URL("https://pets.example.com/")))).toEqual([
      { url: "https://pets.example.com/v1", description: "PUBLIC_BASE_URL" }
    ])
    // None: the contract's default, `/v1` relative to wherever the document is served.
    expect(documentServers(Option.none(), Option.none())).toEqual([])
  })

  it.each(["https://pets.example.com", "https://pets.example.com/v1/", "pets.example.com/v1", "https://a.example/v1,"])(
    "OPENAPI_SERVERS=%s stops the server at start-up with one line naming the variable",
    (value) => {
      const result = spawnSync(process.execPath, [serverEntry()], {
        env: { PATH: process.env.PATH ?? "", DATA_DIR: ":memory:", OPENAPI_SERVERS: value },
        encoding: "utf8",
        timeout: 120_000
      })
      expect(result.status).toBe(2)
      expect(result.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(/^petstore: invalid configuration: OPENAPI_SERVERS: /)
      ])
    }
  )
})
