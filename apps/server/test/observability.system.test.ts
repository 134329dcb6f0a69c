import { once } from "node:events"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  createKey,
  freePort,
  type ServerProcess,
  spawnServer,
  startServerProcess
} from "@petstore/test-support"
import { rawRequest } from "./support/rawHttp.ts"

let server: ServerProcess
let origin: string
let admin: string

beforeAll(async () => {
  ;({ server, origin, admin } = await startServerProcess({ DATA_DIR: ":memory:", LOG_LEVEL: "Info" }))
})
afterAll(() => server?.stop())

const logLines = () =>
  server.output().split("\n").filter((line) => line.startsWith("{")).map((line) =>
    JSON.parse(line) as {
      message: string
      level: string
      annotations: Record<string, unknown>
    }
  )

/** Log lines are written as the request ends; wait for the one with this id. */
const lineFor = async (requestId: string) => {
  for (let attempt = 0; attempt < 100; attempt++) {
    const line = logLines().find((line) => line.message === "request" && line.annotations.requestId === requestId)
    if (line) return line
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`no log line for ${requestId}:\n${server.output()}`)
}

describe("observability", () => {
  it("writes one JSON line per request with its id, route template, status, duration, key id, plan and quota outcome", async () => {
    const created = await createKey(admin, "pro")
    const response = await fetch(`${origin}/v1/pets/42`, {
      headers: { authorization: `Bearer ${created.key}`, "x-request-id": "trace-me-42" }
    })
    expect(response.status).toBe(404)
    expect(response.headers.get("x-request-id")).toBe("trace-me-42")
    const line = await lineFor("trace-me-42")
    expect(line.level).toBe("INFO")
    expect(line.annotations).toMatchObject({
      method: "GET",
      route: "/v1/pets/:petId",
      status: 404,
      keyId: created.id,
      plan: "pro",
      quota: "admitted"
    })
    expect(typeof line.annotations.durationMs).toBe("number")
    expect(logLines().filter((l) => l.annotations.requestId === "trace-me-42")).toHaveLength(1)
    expect(server.output()).not.toContain(created.key)
  })

  it("logs a client that goes away mid-body as status 499 at INFO, not as a failure of the server", async () => {
    const created = await createKey(admin, "pro")
    const { hostname, port } = new URL(origin)
    const socket = connect({ host: hostname, port: Number(port) })
    await once(socket, "connect")
    socket.write([
      "POST /v1/pets HTTP/1.1",
      `Host: ${hostname}`,
      `Authorization: Bearer ${created.key}`,
      "X-Request-Id: gone-mid-body",
      "Content-Type: application/json",
      "Content-Length: 100",
      // The server answers "100 Continue" once it has dispatched the request: then it is waiting for the body.
      "Expect: 100-continue",
      "",
      ""
    ].join("\r\n"))
    await once(socket, "data")
    socket.end("{\"name\":")
    socket.destroy()
    const line = await lineFor("gone-mid-body")
    expect(line).toMatchObject({ level: "INFO", annotations: { status: 499, route: "/v1/pets" } })
    // Lines are written in order: once a later request's line is out, so is anything logged for this one.
    await fetch(`${origin}/healthz`, { headers: { "x-request-id": "after-gone-mid-body" } })
    await lineFor("after-gone-mid-body")
    expect(logLines().filter((line) => line.level === "ERROR")).toEqual([])
  })

  it("logs a request refused before routing (an absolute-form target with a bad authority) as a 400 at INFO, with no ERROR line", async () => {
    const answer = await rawRequest(origin, {
      method: "GET",
      path: "http://a:99999/nothing",
      headers: { "x-request-id": "bad-authority-1" }
    })
    expect(answer.kind === "response" ? answer.status : answer.message).toBe(400)
    const line = await lineFor("bad-authority-1")
    expect(line).toMatchObject({
      level: "INFO",
      annotations: { status: 400, method: "GET", route: "http://a:99999/nothing" }
    })
    expect(logLines().filter((line) => line.level === "ERROR")).toEqual([])
  })

  it("generates a request id when the client sends none, or one that is not sane", async () => {
    const plain = await fetch(`${origin}/healthz`)
    expect(plain.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const hostile = await fetch(`${origin}/healthz`, { headers: { "x-request-id": "x".repeat(500) } })
    expect(hostile.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    await lineFor(hostile.headers.get("x-request-id")!)
  })

  it("marks /v1 answers as not to be cached or sniffed", async () => {
    const response = await fetch(`${origin}/v1/pets`)
    expect(response.headers.get("cache-control")).toBe("no-store")
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
  })

  it("serves Prometheus metrics on the admin listener, to the admin token only", async () => {
    expect((await fetch(`${admin}/metrics`)).status).toBe(401)
    const { key } = await createKey(admin, "enterprise", { perMinute: 1, perDay: 100 })
    await fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    expect((await fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(429)
    await lineFor((await fetch(`${origin}/healthz`)).headers.get("x-request-id")!)

    const metrics = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(metrics.status).toBe(200)
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/)
    const text = await metrics.text()
    expect(text).toMatch(/http_requests_total\{[^}]*route="\/v1\/pets"[^}]*status="429"[^}]*\} 1/)
    expect(text).toMatch(/http_request_duration_seconds_bucket\{[^}]*route="\/v1\/pets"/)
    expect(text).toMatch(/quota_refusals_total\{[^}]*plan="enterprise"[^}]*reason="rate_limited"[^}]*\} 1/)
    expect(text).toMatch(/quota_store_duration_seconds_count\{[^}]*store="memory"/)
    expect(text).toMatch(/database_queries_in_flight/)
    // The process's own gauges, which load-tests/soak.js watches through this endpoint.
    expect(text).toMatch(/^process_resident_memory_bytes [1-9]\d*$/m)
    expect(text).toMatch(/^nodejs_heap_size_used_bytes [1-9]\d*$/m)
    expect(text).toMatch(/^nodejs_heap_size_total_bytes [1-9]\d*$/m)
    for (const stat of ["mean", "p99", "max"]) {
      expect(text).toMatch(new RegExp(`^nodejs_eventloop_lag_${stat}_seconds \\d`, "m"))
    }
    expect(text).not.toContain(key)
  })

  it("serves metrics without a token when METRICS_PUBLIC is set, and still guards the admin API", async () => {
    const [port, adminPort] = [await freePort(), await freePort()]
    const open = spawnServer({
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      DATA_DIR: ":memory:",
      METRICS_PUBLIC: "true"
    })
    try {
      // Until the process binds its ports, connections are refused, and until its routes are ready they are
      // answered 503; the test's timeout, not a count of tries, guards a hang.
      let metrics: Response | undefined
      while ((metrics === undefined || metrics.status === 503) && open.child.exitCode === null) {
        metrics = await fetch(`http://127.0.0.1:${adminPort}/metrics`).catch(() => undefined)
        if (metrics === undefined || metrics.status === 503) await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(metrics?.status, open.output()).toBe(200)
      expect((await fetch(`http://127.0.0.1:${adminPort}/admin/keys`)).status).toBe(401)
    } finally {
      await open.stop()
    }
  })

  it("logs the configuration at start-up with secrets masked, and the store in use", () => {
    const configuration = logLines().find((line) => line.message === "configuration")
    expect(configuration?.annotations).toMatchObject({
      adminToken: "<set>",
      databaseUrl: "<unset: embedded PGlite>",
      quotaStore: "memory"
    })
    expect(server.output()).not.toContain(ADMIN_TOKEN)
    expect(logLines().find((line) => line.message === "database ready")?.annotations.store).toBe("pglite")
  })
})
