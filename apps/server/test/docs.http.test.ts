import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { send } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"
import { Option } from "effect"

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
    expect(answer.body.paths["/v1/pets/{petId}"].get.deprecated).toBe(true)
  })

  it("serves the API reference page at /docs without a key, with no third-party script", async () => {
    const answer = await send(`${origin()}/docs`)
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/)
    expect(answer.text).not.toMatch(/<script[^>]+src="https?:/)
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
    expect(page.headers.get("link")).toMatch(/^<https:\/\/pets\.example\.test\/base\/v1\/pets\?limit=1&cursor=[^>]+>; rel="next"$/)
  })
})
