import { once } from "node:events"
import { createServer, type Server, type Socket, connect } from "node:net"
import { createTestDatabase, postgresAdminUrl, type TestDatabase } from "@petstore/test-support"

/**
 * A TCP proxy in the test process, in front of PostgreSQL, that a test can cut:
 * - `cut("refuse")`: every connection is destroyed and the port stops listening,
 *   so the server's driver sees resets and then ECONNREFUSED (a database that is down);
 * - `cut("blackhole")`: connections stay open and new ones are accepted, but no
 *   byte is forwarded either way (a database, or a network, that stops answering).
 * `resume()` forwards again on the same port.
 */
export interface TcpProxy {
  readonly port: number
  readonly cut: (mode: "refuse" | "blackhole") => Promise<void>
  readonly resume: () => Promise<void>
  readonly close: () => Promise<void>
  /** Connections accepted since the proxy started. */
  readonly accepted: () => number
  /**
   * The next bytes PostgreSQL sends on a connection that asked something after
   * this call (an answer, on whichever connection) are dropped, and
   * so is everything after them on that connection, which stays open: an answer
   * swallowed by a network or a proxy, with nothing to tell the driver.
   */
  readonly swallowNextAnswer: () => void
  /** Every open connection is closed (both ends), as a crashed host's are; new ones are forwarded. */
  readonly dropConnections: () => void
}

export const startTcpProxy = async (target: { host: string; port: number }): Promise<TcpProxy> => {
  const sockets = new Set<Socket>()
  let mode: "forward" | "refuse" | "blackhole" = "forward"
  let acceptedCount = 0
  let swallowNext = false
  let port = 0

  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
    socket.on("error", () => socket.destroy())
  }

  const onConnection = (client: Socket) => {
    acceptedCount++
    track(client)
    if (mode === "refuse") return client.destroy()
    const upstream = connect(target)
    track(upstream)
    client.once("close", () => upstream.destroy())
    upstream.once("close", () => client.destroy())
    // Forward only while the proxy forwards; in a blackhole the bytes are dropped.
    // Whether the client has asked something since a swallow was armed: only an answer is swallowed, never a
    // NOTIFY that reaches an idle listening connection (nothing waits on it, so nothing would show the loss).
    let asked = false
    client.on("data", (chunk) => {
      if (swallowNext) asked = true
      if (mode === "forward") upstream.write(chunk)
    })
    let muted = false
    upstream.on("data", (chunk) => {
      if (swallowNext && asked) [swallowNext, muted] = [false, true]
      if (mode === "forward" && !muted) client.write(chunk)
    })
  }

  let server: Server | undefined
  const listen = async () => {
    const listening = createServer(onConnection)
    listening.listen(port, "127.0.0.1")
    await once(listening, "listening")
    port = (listening.address() as { port: number }).port
    server = listening
  }
  await listen()

  const stopListening = async () => {
    if (server === undefined || !server.listening) return
    const closed = once(server, "close")
    server.close()
    server = undefined
    for (const socket of sockets) socket.destroy()
    await closed
  }

  return {
    get port() {
      return port
    },
    accepted: () => acceptedCount,
    swallowNextAnswer: () => {
      swallowNext = true
    },
    dropConnections: () => {
      for (const socket of sockets) socket.destroy()
    },
    cut: async (how) => {
      mode = how
      if (how === "refuse") await stopListening()
    },
    resume: async () => {
      mode = "forward"
      // Connections held open in a blackhole may have lost bytes: they cannot carry on.
      for (const socket of sockets) socket.destroy()
      if (server === undefined) await listen()
    },
    close: async () => {
      mode = "refuse"
      await stopListening()
    }
  }
}

/** A proxy in front of the PostgreSQL of `databaseUrl`, and the same URL through it. */
export const startProxyInFrontOf = async (databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> => {
  const target = new URL(databaseUrl)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const through = new URL(databaseUrl)
  through.hostname = "127.0.0.1"
  through.port = String(proxy.port)
  return { proxy, url: through.toString() }
}

/**
 * A fresh database with a proxy in front of it, and its URL through the proxy: what the tests of lost connections
 * start from. Each is undone by `undo` (`undoAfterEach`), the proxy first.
 */
export const freshDatabaseBehindProxy = async (
  undo: Array<() => Promise<void>>
): Promise<{ database: TestDatabase; proxy: TcpProxy; url: string }> => {
  const database = await createTestDatabase(postgresAdminUrl!)
  undo.push(() => database.drop())
  const { proxy, url } = await startProxyInFrontOf(database.url)
  undo.push(() => proxy.close())
  return { database, proxy, url }
}
