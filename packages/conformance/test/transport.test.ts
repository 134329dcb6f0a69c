import { once } from "node:events"
import { createServer, type Server, type Socket } from "node:net"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { gzipSync } from "node:zlib"
import { MAX_BODY_BYTES, send, TransportError } from "../src/transport.ts"

/**
 * A raw TCP server that resets a connection when a second request arrives on it: what a client sees when it
 * reuses a keep-alive connection the server has just closed, made deterministic. It answers (keeping the
 * connection alive) the first request of every connection, of the first connection only, or of none.
 */
const startServer = async (
  options: { readonly answers?: "each connection's first" | "the first only" | "none" } = {}
) => {
  const answers = options.answers ?? "each connection's first"
  const requests: Array<{ readonly connection: number; readonly head: string }> = []
  let connections = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
    const connection = ++connections
    let answered = 0
    socket.on("data", (chunk: Buffer) => {
      requests.push({ connection, head: chunk.toString("latin1").split("\r\n")[0]! })
      if (answers === "none" || (answers === "the first only" && connection > 1) || answered > 0) {
        socket.resetAndDestroy()
        return
      }
      answered++
      socket.write(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nKeep-Alive: timeout=60\r\n\r\n{}"
      )
    })
    socket.on("error", () => {})
  })
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/pets`
  return {
    url,
    requests,
    connections: () => connections,
    // A connection the client keeps alive would hold `close` open; the test is over, so it goes too.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      })
  }
}

let server: Awaited<ReturnType<typeof startServer>> | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const request = (method: string, url: string) =>
  send({
    method,
    url,
    headers: { "content-type": "application/json" },
    ...(method === "POST" ? { body: "{}" } : {}),
    signal: AbortSignal.timeout(10_000)
  })

describe("a reset before any answer", () => {
  it("on a reused keep-alive connection is sent once more, on a new connection, for a safe method", async () => {
    server = await startServer()
    expect((await request("GET", server.url)).status).toBe(200)
    const again = await request("GET", server.url)
    expect(again.status).toBe(200)
    expect(again.text).toBe("{}")
    // The first request, the one the reused connection lost, and its repeat on a second connection.
    expect(server.requests.map((seen) => seen.connection)).toEqual([1, 1, 2])
  })

  it("cannot happen to a method that is not safe: it goes out on a connection of its own", async () => {
    // The server resets the second request on any connection: a POST on the kept-alive first connection would
    // be lost and could not be repeated.
    server = await startServer()
    await request("GET", server.url)
    const created = await request("POST", server.url)
    expect(created.status).toBe(200)
    expect(server.requests.map((seen) => [seen.connection, seen.head.split(" ")[0]])).toEqual([[1, "GET"], [2, "POST"]])
  })

  it("on a new connection is reported as it is, and not repeated", async () => {
    server = await startServer({ answers: "none" })
    const error = await request("GET", server.url).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(TransportError)
    expect((error as Error).message).toBe("the connection was reset before any answer (ECONNRESET)")
    expect(server.connections()).toBe(1)
  })

  it("on the repeat too is reported, naming both tries", async () => {
    server = await startServer({ answers: "the first only" })
    await request("GET", server.url)
    const error = await request("GET", server.url).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(TransportError)
    expect((error as Error).message).toBe(
      "the connection was reset before any answer (ECONNRESET), on a new connection too (the first try was on a reused keep-alive connection)"
    )
    expect(server.requests.map((seen) => seen.connection)).toEqual([1, 1, 2])
  })
})

describe("an answer the suite stops reading", () => {
  /** A raw TCP server that answers the first request of each connection as `answer` writes it. */
  const answering = async (answer: (socket: Socket) => void) => {
    const sockets = new Set<Socket>()
    const raw: Server = createServer((socket: Socket) => {
      sockets.add(socket)
      socket.on("error", () => {})
      socket.once("data", () => answer(socket))
    })
    raw.listen(0, "127.0.0.1")
    await once(raw, "listening")
    return {
      url: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1/pets`,
      close: () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy()
          raw.close(() => resolve())
        })
    }
  }

  it("a body that decodes to more than 8 MiB is refused, naming the bound, however small it came compressed", async () => {
    const bomb = gzipSync(Buffer.alloc(MAX_BODY_BYTES + 1, 0x20))
    const target = await answering((socket) => {
      socket.end(Buffer.concat([
        Buffer.from(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\n\r\n`
        ),
        bomb
      ]))
    })
    try {
      const error = await request("GET", target.url).catch((error: unknown) => error)
      expect(error).toBeInstanceOf(TransportError)
      expect((error as Error).message).toBe("the body is over 8 MiB (decoded), more than the suite reads")
    } finally {
      await target.close()
    }
  })

  it("a body that trickles past the request's timeout ends with it, though its head came at once", async () => {
    const target = await answering((socket) => {
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[")
    })
    try {
      const error = await send({
        method: "GET",
        url: target.url,
        headers: {},
        signal: AbortSignal.timeout(500)
      }).catch((error: unknown) => error)
      expect(error).toBeInstanceOf(TransportError)
      expect((error as Error).message).toBe("no answer in time (the request timed out)")
    } finally {
      await target.close()
    }
  })
})
