import { ADMIN_TOKEN, type Answer, bearer, json, send, startRedis, type TestRedis } from "@petstore/test-support"
import { Option, Redacted, Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseRedisUrl } from "../src/net/redisUrl.ts"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError } from "./support/http.ts"
import { redisSuiteOptions } from "./support/layers.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

const limitOf = (answer: Answer) => Number(answer.headers.get("x-ratelimit-limit"))
const remainingOf = (answer: Answer) => Number(answer.headers.get("x-ratelimit-remaining"))
const resetOf = (answer: Answer) => Number(answer.headers.get("x-ratelimit-reset"))

/**
 * Windows are aligned to the wall clock's minutes: a burst that straddles a
 * minute boundary sees its counts reset midway. Such a burst is sent again
 * (with what `burst` makes afresh, such as a new key), so the answers
 * returned, which the test then asserts on, all come from one window.
 */
const inOneWindow = async (burst: () => Promise<ReadonlyArray<Answer>>) => {
  for (let attempt = 0;; attempt++) {
    const answers = await burst()
    const resets = new Set(answers.filter((a) => a.headers.has("x-ratelimit-reset")).map(resetOf))
    if (resets.size <= 1 || attempt === 2) return answers
  }
}

/** The suite over a server that `start` starts: on each database backend, and on the Redis store. */
const quotasOverHttp = (start: () => Promise<RunningServer>) => {
  let server: RunningServer
  const url = (path: string) => `${server.baseUrl}${path}`
  const enterpriseKey = (perMinute: number, perDay: number) => server.createKey("enterprise", { perMinute, perDay })

  beforeAll(async () => {
    server = await start()
  })
  afterAll(() => server?.stop())

  it("puts the rate-limit headers on every response, whatever its status, and each admitted request spends one", async () => {
    const requests = (key: string): ReadonlyArray<[number, string, RequestInit]> => [
      [200, "/pets", { headers: bearer(key) }],
      [201, "/pets", { method: "POST", headers: json(key), body: JSON.stringify({ name: "Counted", categoryId: 1 }) }],
      [400, "/pets?limit=0", { headers: bearer(key) }],
      [404, "/pets/99999999", { headers: bearer(key) }],
      [404, "/nowhere", { headers: bearer(key) }],
      [405, "/pets", { method: "DELETE", headers: bearer(key) }],
      [
        413,
        "/pets",
        {
          method: "POST",
          headers: json(key),
          body: new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("x".repeat(20 * 1024)))
              controller.close()
            }
          }),
          duplex: "half"
        } as RequestInit
      ],
      [415, "/pets", { method: "POST", headers: { ...bearer(key), "content-type": "text/plain" }, body: "x" }]
    ]
    const answers = await inOneWindow(async () => {
      const { key } = await enterpriseKey(1_000, 100_000)
      const answers: Array<Answer> = []
      for (const [, path, init] of requests(key)) answers.push(await send(url(path), init))
      return answers
    })
    expect(answers.map((answer) => answer.status)).toEqual(requests("").map(([status]) => status))
    for (const [index, answer] of answers.entries()) {
      expect(limitOf(answer)).toBe(1_000)
      expect(remainingOf(answer)).toBe(1_000 - 1 - index)
      expect(resetOf(answer) % 60).toBe(0)
      expect(resetOf(answer)).toBeGreaterThan(Date.parse(answer.headers.get("date")!) / 1000)
      expect(answer.headers.get("ratelimit-policy")).toBe("\"minute\";q=1000;w=60, \"day\";q=100000;w=86400")
      expect(answer.headers.get("ratelimit")).toMatch(
        new RegExp(`^"minute";r=${999 - index};t=\\d+, "day";r=${100_000 - 1 - index};t=\\d+$`)
      )
    }
  })

  it("describes the window that binds first: the day when it has fewer requests left", async () => {
    const { key } = await enterpriseKey(10, 3)
    const first = await send(url("/pets"), { headers: bearer(key) })
    expect(limitOf(first)).toBe(3)
    expect(remainingOf(first)).toBe(2)
    expect(resetOf(first) % 86_400).toBe(0)
  })

  it("answers the (limit+1)-th request with 429, the Error body and Retry-After until the window resets", async () => {
    const answers = await inOneWindow(async () => {
      const { key } = await server.createKey("free")
      const answers: Array<Answer> = []
      for (let i = 0; i < 61; i++) answers.push(await send(url("/pets?limit=1"), { headers: bearer(key) }))
      return answers
    })
    expect(answers.slice(0, 60).map((answer) => answer.status)).toEqual(Array(60).fill(200))
    const refused = answers[60]!
    expectError(refused, 429, "rate_limited")
    expect(remainingOf(refused)).toBe(0)
    const retryAfter = Number(refused.headers.get("retry-after"))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    // Retry-After counts from when the refusal was sent: to the window's end, to the second.
    const refusedAt = Date.parse(refused.headers.get("date")!) / 1000
    expect(Math.abs(refusedAt + retryAfter - resetOf(refused))).toBeLessThanOrEqual(1)
  })

  it("limits requests without a valid key by client address, and says so in their headers", async () => {
    const answer = await send(url("/pets"), { headers: bearer("psk_unknown") })
    expectError(answer, 401, "unauthorized")
    expect(limitOf(answer)).toBe(60)
    expect(answer.headers.get("ratelimit-policy")).toBe("\"minute\";q=60;w=60")
  })

  it("GET /v1/rate_limit reports both windows without spending quota, even while limited", async () => {
    const [first, second, third, status, again] = await inOneWindow(async () => {
      const { key } = await enterpriseKey(2, 50)
      const answers: Array<Answer> = []
      for (let i = 0; i < 3; i++) answers.push(await send(url("/pets"), { headers: bearer(key) }))
      for (let i = 0; i < 2; i++) answers.push(await send(url("/rate_limit"), { headers: bearer(key) }))
      return answers
    })
    expect([first, second, third].map((answer) => answer!.status)).toEqual([200, 200, 429])
    expect(status!.status).toBe(200)
    expect(status!.body).toEqual({
      plan: "enterprise",
      minute: { limit: 2, remaining: 0, reset: resetOf(second!) },
      day: { limit: 50, remaining: 48, reset: expect.any(Number) },
      ban: null
    })
    expect(remainingOf(status!)).toBe(0)
    expect(again!.body.day.remaining).toBe(48)
  })

  it("bans a key that keeps sending while limited, refuses even /rate_limit, and lifts it through the admin API", async () => {
    const { id, key } = await enterpriseKey(1, 1_000)
    const answers: Array<Answer> = []
    for (let i = 0; i < 3; i++) answers.push(await send(url("/pets"), { headers: bearer(key) }))
    const banned = await send(url("/pets"), { headers: bearer(key) })
    expectError(banned, 429, "api_key_banned")
    expect(Number(banned.headers.get("retry-after"))).toBeGreaterThan(800)
    expectError(await send(url("/rate_limit"), { headers: bearer(key) }), 429, "api_key_banned")

    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const usage = await send(`${server.adminUrl}/admin/keys/${id}/usage`, { headers: admin })
    expect(usage.status).toBe(200)
    expect(usage.body.ban.until).toBeGreaterThan(Date.now() / 1000 + 800)
    expect(usage.body.day).toMatchObject({ limit: 1_000, used: 1 })

    const unban = await send(`${server.adminUrl}/admin/keys/${id}/unban`, { method: "POST", headers: admin })
    expect(unban.status).toBe(204)
    const after = await send(url("/rate_limit"), { headers: bearer(key) })
    expect(after.status).toBe(200)
    expect(after.body.ban).toBeNull()
  })

  it("admin usage and unban answer 404 for an unknown key", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    expectError(
      await send(`${server.adminUrl}/admin/keys/key_0000000000000000/usage`, { headers: admin }),
      404,
      "not_found"
    )
    expectError(
      await send(`${server.adminUrl}/admin/keys/key_0000000000000000/unban`, { method: "POST", headers: admin }),
      404,
      "not_found"
    )
  })

  it("applies a plan change on the next request, keeping the window's counts", async () => {
    const answers = await inOneWindow(async () => {
      const { id, key } = await server.createKey("free")
      const answers: Array<Answer> = []
      for (let i = 0; i < 61; i++) answers.push(await send(url("/pets?limit=1"), { headers: bearer(key) }))
      answers.push(
        await send(`${server.adminUrl}/admin/keys/${id}`, {
          method: "PATCH",
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ plan: "pro" })
        })
      )
      answers.push(await send(url("/pets?limit=1"), { headers: bearer(key) }))
      return answers
    })
    const [limited, patched, next] = answers.slice(60)
    expect(limited!.status).toBe(429)
    expect(patched!.status).toBe(200)
    expect(next!.status).toBe(200)
    expect(limitOf(next!)).toBe(300)
    expect(remainingOf(next!)).toBe(300 - 61)
  })
}

describeOnEachBackend("quotas over HTTP", ({ name }) => quotasOverHttp(() => startServer(name)))

for (const type of ["single", "cluster"] as const) {
  describe(`quotas over HTTP on the redis store (${type})`, redisSuiteOptions(), () => {
    let redis: TestRedis | undefined
    afterAll(() => redis?.stop())
    quotasOverHttp(async () => {
      redis = await startRedis({ cluster: type === "cluster" })
      return startServer("pglite", {
        quotaStore: Option.some("redis"),
        redisType: type,
        redisUrl: Option.some(Redacted.make(Result.getOrThrow(parseRedisUrl(redis.url)))),
        quotaStoreTimeoutMillis: 10_000
      })
    })
  })
}
