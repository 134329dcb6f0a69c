import { once } from "node:events"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerProcess, startServerProcess } from "@petstore/test-support"

let server: ServerProcess
let port: number

beforeAll(async () => {
  // HOST unset: the public listener on all interfaces, the admin one on its loopback default.
  ;({ server, port } = await startServerProcess({ DATA_DIR: ":memory:", LOG_LEVEL: "Info", HOST: "0.0.0.0" }))
})
afterAll(() => server?.stop())

/**
 * Opens a connection, sends a request line, then one more header line every
 * second without ever ending the headers, and reports when (and how) the server ends it.
 */
const trickle = async () => {
  const socket = connect(port, "127.0.0.1")
  await once(socket, "connect")
  const opened = Date.now()
  let received = ""
  socket.on("data", (data) => (received += data))
  socket.write("GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n")
  let line = 0
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(`X-Slow-${++line}: still here\r\n`)
  }, 1_000)
  await once(socket, "close")
  clearInterval(timer)
  return { seconds: (Date.now() - opened) / 1000, received }
}

describe("slow clients", () => {
  it("a client that never finishes its headers is cut off after about 10 s (slowloris)", async () => {
    const { seconds, received } = await trickle()
    expect(seconds).toBeGreaterThanOrEqual(9)
    // Cut off, not left open: the upper bound is a hang guard (Node checks header timeouts on a timer, and a
    // busy machine delays it), the lower one is the promise.
    expect(seconds).toBeLessThan(60)
    expect(received === "" || received.startsWith("HTTP/1.1 408")).toBe(true)
  })

  it("the server keeps answering others meanwhile", async () => {
    const slow = trickle()
    const response = await fetch(`http://127.0.0.1:${port}/healthz`)
    expect(response.status).toBe(200)
    await slow
  })

  it("binds the admin listener to loopback by default", () => {
    const listening = server.output().split("\n").find((line) => line.includes("\"listening\""))
    expect(JSON.parse(listening!).annotations.admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  })
})
