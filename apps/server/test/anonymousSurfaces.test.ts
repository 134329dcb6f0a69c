/**
 * What a caller without a key can make the server do (issue 20, item 2): `/docs` and `/v1/openapi.json`
 * are served compressed, with validators and caching, under the per-address anonymous limit; the probes
 * answer without a limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { request } from "node:http"
import { negotiatedEncoding } from "../src/http/compression.ts"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

/** One GET through node:http, which leaves the body as sent (fetch would decompress it). */
const get = (url: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; headers: Record<string, string | Array<string> | undefined>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(url, { headers }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on(
          "end",
          () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) })
        )
        response.on("error", reject)
      })
      req.on("error", reject)
      req.setTimeout(60_000, () => req.destroy(new Error(`GET ${url}: no answer in 60 s`)))
      req.end()
    }
  )

describe("Accept-Encoding negotiation", () => {
  it.each<[string | undefined, string]>([
    [undefined, "identity"],
    ["", "identity"],
    ["gzip", "gzip"],
    ["gzip, deflate, br", "br"],
    ["br;q=0.5, gzip", "gzip"],
    ["br;q=0, gzip;q=0", "identity"],
    ["*", "br"],
    ["*;q=0.1, gzip;q=0.5", "gzip"],
    ["identity;q=0, *;q=0", "identity"],
    ["deflate", "identity"],
    ["GZIP;Q=1", "gzip"],
    ["br;q=nonsense, gzip;q=0.2, identity;q=0.1", "gzip"]
  ])("%j → %s", (header, expected) => {
    expect(negotiatedEncoding(header)).toBe(expected)
  })
})

describeOnEachBackend("anonymous surfaces", ({ name }) => {
  let server: RunningServer
  const origin = () => new URL(server.baseUrl).origin

  beforeAll(async () => {
    server = await startServer(name)
  })
  afterAll(() => server?.stop())

  it(
    "serves /docs and /v1/openapi.json compressed (br, gzip), with a strong ETag per encoding, Vary and Cache-Control, and 304 on If-None-Match",
    async () => {
      for (const path of ["/docs", "/v1/openapi.json"]) {
        const plain = await get(`${origin()}${path}`)
        expect(plain.status).toBe(200)
        expect(plain.headers["content-encoding"]).toBeUndefined()
        const gzipped = await get(`${origin()}${path}`, { "accept-encoding": "gzip" })
        const brotli = await get(`${origin()}${path}`, { "accept-encoding": "gzip, deflate, br" })
        expect(gzipped.headers["content-encoding"]).toBe("gzip")
        expect(brotli.headers["content-encoding"]).toBe("br")
        expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true)
        expect(brotliDecompressSync(brotli.body).equals(plain.body)).toBe(true)
        expect(brotli.body.length).toBeLessThan(plain.body.length / 3)
        const etags = [plain, gzipped, brotli].map((answer) => answer.headers.etag as string)
        for (const etag of etags) expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
        expect(new Set(etags).size).toBe(3)
        for (const answer of [plain, gzipped, brotli]) {
          expect(answer.headers.vary).toBe("Accept-Encoding")
          expect(answer.headers["cache-control"]).toBe("public, max-age=300")
        }
        const revalidated = await get(`${origin()}${path}`, {
          "accept-encoding": "br",
          "if-none-match": `"other", W/${etags[2]}`
        })
        expect(revalidated.status).toBe(304)
        expect(revalidated.body.length).toBe(0)
        expect(revalidated.headers.etag).toBe(etags[2])
        // Another encoding's validator is not this representation's.
        expect((await get(`${origin()}${path}`, { "accept-encoding": "gzip", "if-none-match": etags[2]! })).status)
          .toBe(200)
      }
    },
    120_000
  )

  it(
    "puts the anonymous limit on /docs and /v1/openapi.json, shared with /v1 without a key, and not on the probes",
    async () => {
      // A server of its own: the limit is per address, and every request of this file comes from 127.0.0.1.
      const limitedServer = await startServer(name, { anonymousPerMinute: 8 })
      const origin = () => new URL(limitedServer.baseUrl).origin
      try {
        // Admitted answers by the window they were counted in (X-RateLimit-Reset): the requests may straddle the
        // turn of a minute, and the new window admits eight more. Until the first 429, within a bound: 8 then 8.
        const admittedByWindow = new Map<string, number>()
        let limited: Awaited<ReturnType<typeof get>> | undefined
        for (let i = 0; i < 20 && limited === undefined; i++) {
          const answer = await get(`${origin()}${i % 2 === 0 ? "/docs" : "/v1/openapi.json"}`, {
            "accept-encoding": "br"
          })
          expect(answer.headers["x-ratelimit-limit"]).toBe("8")
          if (answer.status === 429) limited = answer
          else {
            expect(answer.status).toBe(200)
            const window = String(answer.headers["x-ratelimit-reset"])
            admittedByWindow.set(window, (admittedByWindow.get(window) ?? 0) + 1)
          }
        }
        expect(limited, `admitted by window: ${JSON.stringify([...admittedByWindow])}`).toBeDefined()
        // The window that refused had admitted exactly its eight; any earlier one, at most eight.
        expect(admittedByWindow.get(String(limited!.headers["x-ratelimit-reset"]))).toBe(8)
        for (const admitted of admittedByWindow.values()) expect(admitted).toBeLessThanOrEqual(8)
        expect(Number(limited!.headers["retry-after"])).toBeGreaterThanOrEqual(1)
        expectError(
          {
            status: limited!.status,
            headers: new Headers(limited!.headers as Record<string, string>),
            body: JSON.parse(limited!.body.toString()),
            text: ""
          },
          429,
          "rate_limited"
        )
        expect((await get(`${limitedServer.baseUrl}/pets`)).status).toBe(429)
        for (let i = 0; i < 20; i++) {
          expect((await get(`${origin()}/healthz`)).status).toBe(200)
          expect((await get(`${origin()}/readyz`)).status).toBe(200)
        }
      } finally {
        await limitedServer.stop()
      }
    },
    120_000
  )
})
