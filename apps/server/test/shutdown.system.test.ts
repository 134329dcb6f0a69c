/**
 * Graceful shutdown of a real server process (PGlite in memory).
 *
 * In-flight requests are made deterministic: each is a POST /v1/pets whose
 * headers and first body bytes are sent, and whose body is finished only after
 * SIGTERM. The edge spends quota before the handler reads the body, so the day
 * window's usage (GET /v1/rate_limit, which costs nothing) tells when the server
 * has every held request in hand — no sleeping on a guess.
 */
import { request } from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import { eventually, type StartedProcess, startServerProcess, tryConnect, waitForExit } from "@petstore/test-support"

const running: Array<StartedProcess> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.server.stop()))
})

const start = async () => {
  const started = await startServerProcess({ DATA_DIR: ":memory:" })
  running.push(started)
  return started
}

interface HeldRequest {
  /** Sends the rest of the body. */
  readonly finish: () => void
  readonly answer: Promise<{ status: number; text: string } | { error: string }>
}

/** A POST /v1/pets whose body is sent only in part until `finish` is called. */
const holdCreate = (port: number, key: string, name: string): HeldRequest => {
  const body = JSON.stringify({ name, categoryId: 7 })
  const req = request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: "/v1/pets",
    agent: false,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body))
    }
  })
  const answer = new Promise<{ status: number; text: string } | { error: string }>((resolve) => {
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ error: `${error.code ?? ""} ${error.message}` }))
    req.on("response", (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }))
      response.on("error", (error: NodeJS.ErrnoException) => resolve({ error: `${error.code ?? ""} ${error.message}` }))
    })
  })
  req.flushHeaders()
  req.write(body.slice(0, 5))
  return { finish: () => req.end(body.slice(5)), answer }
}

/** Requests of the key admitted so far today (GET /v1/rate_limit spends nothing). */
const usedToday = async (origin: string, key: string) => {
  const response = await fetch(`${origin}/v1/rate_limit`, {
    headers: { authorization: `Bearer ${key}` },
    signal: AbortSignal.timeout(60_000)
  })
  const status = (await response.json()) as { day: { limit: number; remaining: number } }
  return status.day.limit - status.day.remaining
}

describe("graceful shutdown of a server process", () => {
  it("on SIGTERM: refuses new connections at once, completes the requests in flight with their normal answers, exits 0", async () => {
    const { server, port, origin, createKey } = await start()
    const key = await createKey("pro")
    // Some ordinary traffic first, so the in-flight requests are not the first ones.
    for (let i = 0; i < 5; i++) {
      const created = await fetch(`${origin}/v1/pets`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `Before ${i}`, categoryId: 1 })
      })
      expect(created.status).toBe(201)
    }
    const before = await usedToday(origin, key)

    const held = Array.from({ length: 4 }, (_, i) => holdCreate(port, key, `In flight ${i}`))
    const inHand = await eventually(async () => (await usedToday(origin, key)) >= before + held.length, 10_000)
    expect(inHand, `the server never admitted the held requests:\n${server.output()}`).toBe(true)

    const signalledAt = Date.now()
    server.child.kill("SIGTERM")

    // New connections are refused soon after the signal, while the held requests are still open.
    const refused = await eventually(
      async () => (await tryConnect("127.0.0.1", port, 1_000)) === "ECONNREFUSED",
      30_000,
      20
    )
    const refusedAfterMs = Date.now() - signalledAt
    expect(refused, `new connections were still accepted ${refusedAfterMs} ms after SIGTERM:\n${server.output()}`).toBe(
      true
    )
    expect(server.child.exitCode, `the process exited with requests in flight:\n${server.output()}`).toBeNull()
    expect(server.child.signalCode).toBeNull()

    for (const request of held) request.finish()
    const answers = await Promise.all(held.map((request) => request.answer))
    answers.forEach((answer, i) => {
      expect(answer, `in-flight request ${i} after SIGTERM:\n${server.output()}`).toMatchObject({ status: 201 })
      if ("text" in answer) {
        expect(JSON.parse(answer.text)).toEqual({
          id: expect.any(Number),
          name: `In flight ${i}`,
          categoryId: 7,
          status: "available"
        })
      }
    })

    const exit = await waitForExit(server.child, 15_000)
    expect(exit, `still running 15 s after its last request:\n${server.output()}`).toBeDefined()
    expect(
      { code: exit!.code, signal: exit!.signal },
      `exit ${JSON.stringify(exit)} ${Date.now() - signalledAt} ms after SIGTERM; output:\n${server.output()}`
    ).toEqual({ code: 0, signal: null })
  })

  it("on SIGTERM with only an idle keep-alive connection open: exits 0 within 5 s", async () => {
    const { server, origin, createKey } = await start()
    const key = await createKey("pro")
    const { Agent } = await import("node:http")
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          `${origin}/v1/pets?limit=1`,
          { agent, headers: { authorization: `Bearer ${key}` } },
          (response) => {
            response.resume()
            response.on("end", () => resolve(response.statusCode ?? 0))
          }
        )
        req.on("error", reject)
        req.end()
      })
      expect(status).toBe(200)
      const signalledAt = Date.now()
      server.child.kill("SIGTERM")
      const exit = await waitForExit(server.child, 5_000)
      expect(exit, `still running 5 s after SIGTERM with an idle keep-alive connection:\n${server.output()}`)
        .toBeDefined()
      expect(
        { code: exit!.code, signal: exit!.signal },
        `exit ${JSON.stringify(exit)} ${Date.now() - signalledAt} ms after SIGTERM; output:\n${server.output()}`
      ).toEqual({ code: 0, signal: null })
    } finally {
      agent.destroy()
    }
  })

  it("on SIGINT: exits 0 within 10 s", async () => {
    const { server, origin } = await start()
    expect((await fetch(`${origin}/healthz`)).status).toBe(200)
    const signalledAt = Date.now()
    server.child.kill("SIGINT")
    const exit = await waitForExit(server.child, 10_000)
    expect(exit, `still running 10 s after SIGINT:\n${server.output()}`).toBeDefined()
    expect(
      { code: exit!.code, signal: exit!.signal },
      `exit ${JSON.stringify(exit)} ${Date.now() - signalledAt} ms after SIGINT; output:\n${server.output()}`
    ).toEqual({ code: 0, signal: null })
  })
})
