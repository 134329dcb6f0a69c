/**
 * CORS in a real browser: a page served from another origin (another loopback port) calls the API with a key
 * through `fetch`; Chromium lets an allowed origin read the answers and blocks any other.
 */
import { bearer, send } from "@petstore/test-support"
import { chromiumAvailable, launchChromium } from "@petstore/test-support/browser"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/testServer.ts"
import { settings } from "./support/settings.ts"

/** A web application's origin: an empty page, on a loopback port of its own. */
const startPageServer = async (): Promise<{ readonly origin: string; readonly server: Server }> => {
  const server = createServer((_request, response) =>
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(
      "<!doctype html><title>app</title>"
    )
  )
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

/** What the page's script saw: the answers it could read, or the error its fetch rejected with. */
type Seen =
  | {
    readonly ok: true
    readonly list: { status: number; pets: Array<unknown>; remaining: string | null; requestId: string | null }
    readonly created: { status: number; name: string; location: string | null }
    readonly missing: { status: number; requestId: string | null; bodyRequestId: string }
  }
  | { readonly ok: false; readonly error: string }

/** In the page: creates a pet, lists pets and asks for one that does not exist, with the key as a bearer token. */
const callTheApi = ({ api, key, name }: { api: string; key: string; name: string }): Promise<Seen> =>
  (async (): Promise<Seen> => {
    try {
      const auth = { authorization: `Bearer ${key}` }
      const created = await fetch(`${api}/pets`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name, categoryId: 1 })
      })
      const list = await fetch(`${api}/pets?limit=5`, { headers: auth })
      const missing = await fetch(`${api}/pets/999999`, { headers: auth })
      return {
        ok: true,
        list: {
          status: list.status,
          pets: (await list.json()) as Array<unknown>,
          remaining: list.headers.get("x-ratelimit-remaining"),
          requestId: list.headers.get("x-request-id")
        },
        created: {
          status: created.status,
          name: ((await created.json()) as { name: string }).name,
          location: created.headers.get("location")
        },
        missing: {
          status: missing.status,
          requestId: missing.headers.get("x-request-id"),
          bodyRequestId: ((await missing.json()) as { requestId: string }).requestId
        }
      }
    } catch (error) {
      return { ok: false, error: String(error) }
    }
  })()

describe.skipIf(!chromiumAvailable)("CORS in Chromium", () => {
  let api: RunningServer
  let browser: Browser
  let allowed: { readonly origin: string; readonly server: Server }
  let other: { readonly origin: string; readonly server: Server }
  let key: string

  beforeAll(async () => {
    allowed = await startPageServer()
    other = await startPageServer()
    api = await startServer("pglite", { corsAllowedOrigins: settings.corsAllowedOrigins(allowed.origin) })
    key = (await api.createKey("business")).key
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    await api?.stop()
    for (const page of [allowed, other]) page?.server.close()
  })

  const runFrom = async (origin: string, name: string) => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(`${origin}/`)
      return await page.evaluate(callTheApi, { api: api.baseUrl, key, name })
    } finally {
      await context.close()
    }
  }

  it("a page on an allowed origin lists and creates pets with a key, and reads the headers the API exposes", async () => {
    const seen = await runFrom(allowed.origin, "From the browser")
    expect(seen.ok, JSON.stringify(seen)).toBe(true)
    if (!seen.ok) return
    expect(seen.list.status).toBe(200)
    expect(Array.isArray(seen.list.pets)).toBe(true)
    expect(seen.list.remaining).toMatch(/^\d+$/)
    expect(seen.list.requestId).toMatch(/./)
    expect(seen.created).toEqual({
      status: 201,
      name: "From the browser",
      location: expect.stringMatching(/^\/v1\/pets\/\d+$/)
    })
    expect(seen.missing.status).toBe(404)
    expect(seen.missing.bodyRequestId).toBe(seen.missing.requestId)
  })

  it("a page on an origin not allowed is blocked by the browser: its fetch rejects, and nothing is created", async () => {
    const seen = await runFrom(other.origin, "Blocked by the browser")
    expect(seen).toEqual({ ok: false, error: expect.stringMatching(/TypeError: Failed to fetch/) })
    const pets = await send(`${api.baseUrl}/pets?limit=100`, { headers: bearer(key) })
    expect(pets.body.map((pet: { name: string }) => pet.name)).not.toContain("Blocked by the browser")
  })
})
