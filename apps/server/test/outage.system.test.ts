/**
 * A database outage, and the recovery from it, seen from a real server process.
 * The server reaches its fresh PostgreSQL database through a TCP proxy in this
 * test (support/tcpProxy.ts), which the test cuts and resumes:
 * - "refuse": every connection is destroyed and the port stops listening (the
 *   database is down: resets, then ECONNREFUSED);
 * - "blackhole": connections stay open but nothing is forwarded (the database,
 *   or the network to it, stops answering; nothing tells the driver).
 * During the outage every /v1 request answers 503 `service_unavailable` with
 * `Retry-After` within a bound (none hangs), /readyz answers 503, /healthz 200,
 * and the process stays up. After the proxy resumes, the server recovers by
 * itself and /v1 answers 200 again.
 *
 * API keys are cached in-process for up to 4 s, so the key is created and used
 * before the cut. Each outage is probed twice: at once (the key is cached, the
 * quota check needs the database) and after the cache's 4 s have run out (the
 * key lookup needs it too) — the one wait here that is not a poll, because it is
 * the documented TTL.
 */
import { describe, expect, it } from "vitest"
import { eventually, send, type StartedProcess, startServerProcess } from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"
import { freshDatabaseBehindProxy, type TcpProxy } from "./support/tcpProxy.ts"
import { undoAfterEach } from "./support/undo.ts"

const REQUEST_BOUND_MS = 10_000
const RECOVERY_BOUND_MS = 30_000
const KEY_CACHE_TTL_MS = 4_000

const cleanup = undoAfterEach()

/** A fresh database behind a proxy, a server process on it, and a live key already used (and cached). */
const setUp = async (env: Record<string, string> = {}) => {
  const { proxy, url } = await freshDatabaseBehindProxy(cleanup)
  const started: StartedProcess = await startServerProcess({ DATABASE_URL: url, ...env })
  cleanup.push(() => started.server.stop())
  // Runs first: connections held in a blackhole are let go, so the server stops promptly.
  cleanup.push(() => proxy.resume())
  const key = await started.createKey("enterprise", { perMinute: 100_000, perDay: 1_000_000 })
  const first = await send(`${started.origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
  expect(first.status, first.text).toBe(200)
  return { proxy, started, key }
}

/** A request that must be answered within the bound; a hang comes back as status 0 with the time waited. */
const timed = async (url: string, init: RequestInit = {}) => {
  const startedAt = Date.now()
  try {
    const answer = await send(url, { ...init, signal: AbortSignal.timeout(REQUEST_BOUND_MS) })
    return { ...answer, ms: Date.now() - startedAt }
  } catch (error) {
    return {
      status: 0,
      headers: new Headers(),
      body: undefined,
      text: `no answer: ${String(error)}`,
      ms: Date.now() - startedAt
    }
  }
}

const expectOutageAnswers = async (started: StartedProcess, key: string) => {
  const auth = { authorization: `Bearer ${key}` }
  // Concurrently: the whole /v1 surface a client touches, plus the health endpoints.
  const answers = {
    list: timed(`${started.origin}/v1/pets?limit=5`, { headers: auth }),
    create: timed(`${started.origin}/v1/pets`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "During the outage", categoryId: 1 })
    }),
    get: timed(`${started.origin}/v1/pets/1`, { headers: auth }),
    rateLimit: timed(`${started.origin}/v1/rate_limit`, { headers: auth }),
    readyz: timed(`${started.origin}/readyz`),
    healthz: timed(`${started.origin}/healthz`)
  }
  const got = Object.fromEntries(
    await Promise.all(Object.entries(answers).map(async ([what, answer]) => [what, await answer] as const))
  )
  const summary = Object.entries(got).map(([what, a]) =>
    `${what}: ${a.status} after ${a.ms} ms ${a.text.slice(0, 160)}`
  ).join("\n")
  const where = `\n${summary}\nserver output:\n${started.server.output().slice(-3_000)}`
  // Soft: an outage that is answered wrongly still goes on to check the recovery.
  expect.soft(Object.fromEntries(Object.entries(got).map(([what, a]) => [what, a.status])), where).toEqual({
    list: 503,
    create: 503,
    get: 503,
    rateLimit: 503,
    readyz: 503,
    healthz: 200
  })
  for (const what of ["list", "create", "get", "rateLimit"] as const) {
    const answer = got[what]!
    if (answer.status !== 503) continue
    expect.soft(answer.headers.get("content-type"), `${what}${where}`).toMatch(/^application\/json/)
    expect.soft(answer.body, `${what}${where}`).toEqual({
      code: "service_unavailable",
      status: 503,
      message: expect.any(String),
      requestId: answer.headers.get("x-request-id")
    })
    expect.soft(answer.headers.get("retry-after"), `${what} without Retry-After${where}`).toMatch(/^[1-9][0-9]*$/)
  }
  expect(started.server.child.exitCode, `the process exited during the outage${where}`).toBeNull()
}

const expectRecovery = async (proxy: TcpProxy, started: StartedProcess, key: string) => {
  await proxy.resume()
  const resumedAt = Date.now()
  let last = ""
  const recovered = await eventually(
    async () => {
      const answer = await send(`${started.origin}/v1/pets?limit=5`, {
        headers: { authorization: `Bearer ${key}` },
        signal: AbortSignal.timeout(REQUEST_BOUND_MS)
      }).catch((error) => ({ status: 0, text: String(error) }))
      last = `${answer.status} ${answer.text}`
      return answer.status === 200
    },
    RECOVERY_BOUND_MS,
    200
  )
  expect(
    recovered,
    `no 200 within ${RECOVERY_BOUND_MS} ms of the database coming back; last: ${last}\n${started.server.output()}`
  ).toBe(true)
  const recoveredAfterMs = Date.now() - resumedAt
  // Writes and readiness come back as well.
  const created = await send(`${started.origin}/v1/pets`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "After the outage", categoryId: 1 }),
    signal: AbortSignal.timeout(REQUEST_BOUND_MS)
  })
  expect(created.status, created.text).toBe(201)
  const ready = await eventually(
    async () =>
      (await fetch(`${started.origin}/readyz`, { signal: AbortSignal.timeout(REQUEST_BOUND_MS) })).status === 200,
    RECOVERY_BOUND_MS - recoveredAfterMs,
    200
  )
  expect(ready).toBe(true)
  expect(started.server.child.exitCode).toBeNull()
  return recoveredAfterMs
}

/** Waits out the in-process key cache, so that authentication needs the database. */
const keyCacheExpired = () => new Promise((resolve) => setTimeout(resolve, KEY_CACHE_TTL_MS + 250))

describe("database outage seen from a server process", needsPostgres, () => {
  it("database down (connections reset, then refused): 503 with Retry-After in bounded time, /readyz 503, /healthz 200; recovers by itself", async () => {
    const { proxy, started, key } = await setUp()
    await proxy.cut("refuse")
    // At once (the key is still cached: the quota check needs the database) …
    await expectOutageAnswers(started, key)
    // … and once the key cache has expired (authentication needs it too): still bounded, still 503.
    await keyCacheExpired()
    await expectOutageAnswers(started, key)
    await expectRecovery(proxy, started, key)
  })

  it("with the in-memory quota store, the handlers' own 503s carry Retry-After too", async () => {
    // The key is cached and quota needs no database, so the failure surfaces in the handlers' queries.
    const { proxy, started, key } = await setUp({ QUOTA_STORE: "memory" })
    await proxy.cut("refuse")
    const auth = { authorization: `Bearer ${key}` }
    const answers = await Promise.all([
      timed(`${started.origin}/v1/pets?limit=5`, { headers: auth }),
      timed(`${started.origin}/v1/pets/1`, { headers: auth }),
      timed(`${started.origin}/v1/pets`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: "During the outage", categoryId: 1 })
      })
    ])
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(503)
      expect(answer.body).toEqual({
        code: "service_unavailable",
        status: 503,
        message: expect.any(String),
        requestId: answer.headers.get("x-request-id")
      })
      expect(answer.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
    }
    await expectRecovery(proxy, started, key)
  })

  it("database stops answering (connections open, no bytes): 503 with Retry-After in bounded time, /readyz 503, /healthz 200; recovers by itself", async () => {
    const { proxy, started, key } = await setUp()
    await proxy.cut("blackhole")
    // One round only: each request that hangs costs the whole bound.
    await expectOutageAnswers(started, key)
    await expectRecovery(proxy, started, key)
  })
})
