/**
 * SHUTDOWN_DRAIN_SECONDS: between SIGTERM and closing its listener, a server
 * behind a load balancer fails its readiness check while it goes on serving,
 * so the balancer takes it out of rotation first (the fleet test shows the
 * balancer's side: fleet/test/fleet.system.test.ts).
 */
import { spawnSync } from "node:child_process"
import { afterEach, describe, expect, it } from "vitest"
import {
  eventually,
  serverEntry,
  type StartedProcess,
  startServerProcess,
  tryConnect,
  waitForExit
} from "@petstore/test-support"

const main = serverEntry()

const running: Array<StartedProcess> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.server.stop()))
})

/** Long enough that the requests below, sent as soon as the drain shows, fall inside it on a slow machine. */
const DRAIN_SECONDS = 5

describe("draining before shutdown", () => {
  it.each(["-1", "1.5", "soon"])("SHUTDOWN_DRAIN_SECONDS=%s: exits 2 with one line naming the variable", (value) => {
    const result = spawnSync(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? "", DATA_DIR: ":memory:", SHUTDOWN_DRAIN_SECONDS: value },
      encoding: "utf8",
      timeout: 120_000
    })
    expect(result.status).toBe(2)
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^petstore: invalid configuration: SHUTDOWN_DRAIN_SECONDS: /)
    ])
  })

  it("on SIGTERM: /readyz answers 503 at once while every other request, on new connections too, is served; then the listener closes and the process exits 0", async () => {
    const started = await startServerProcess({ DATA_DIR: ":memory:", SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS) })
    running.push(started)
    const { server, origin, port } = started
    const key = await started.createKey("free")
    expect((await fetch(`${origin}/readyz`)).status).toBe(200)

    server.child.kill("SIGTERM")
    let readyz: Response | undefined
    const draining = await eventually(
      async () => {
        readyz = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(30_000) })
        return readyz.status === 503
      },
      30_000,
      20
    )
    expect(draining, `/readyz still ${readyz?.status} after SIGTERM:\n${server.output()}`).toBe(true)
    expect(readyz!.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
    expect(await readyz!.json()).toEqual({
      code: "service_unavailable",
      status: 503,
      message: "The server is shutting down",
      requestId: readyz!.headers.get("x-request-id")
    })

    // `fetch` here opens a new connection per request: the listener still accepts, and /v1 is served as usual.
    const [health, pets, created] = await Promise.all([
      fetch(`${origin}/healthz`, { headers: { connection: "close" } }),
      fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}`, connection: "close" } }),
      fetch(`${origin}/v1/pets`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", connection: "close" },
        body: JSON.stringify({ name: "Drained", categoryId: 1 })
      })
    ])
    expect({ health: health.status, pets: pets.status, created: created.status }, server.output()).toEqual({
      health: 200,
      pets: 200,
      created: 201
    })
    expect(server.child.exitCode).toBeNull()

    const closed = await eventually(
      async () => (await tryConnect("127.0.0.1", port, 1_000)) === "ECONNREFUSED",
      (DRAIN_SECONDS + 10) * 1_000,
      50
    )
    expect(closed, `the listener still accepts connections:\n${server.output()}`).toBe(true)
    const exit = await waitForExit(server.child, 15_000)
    expect(exit && { code: exit.code, signal: exit.signal }, server.output()).toEqual({ code: 0, signal: null })
  })
})
