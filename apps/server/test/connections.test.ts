/**
 * Connections to PostgreSQL cut while they start. postgres.js arms its connect timeout only once the socket
 * factory (`connections.ts`) has answered, so a factory that waits forever loses that connection for good: the
 * pool is one connection short until the process restarts. A connection closed by the far end between the TLS
 * request and its answer closes with no error, which a wait for the answer's bytes alone never noticed; 60
 * connection cuts in `lostSessions.system` now and then left a server that served no write for a minute.
 */
import { eventually, postgresAdminUrl } from "@petstore/test-support"
import { once } from "node:events"
import net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { connectionSettings } from "../src/db/connectionSettings.ts"
import { socketFactory } from "../src/db/connections.ts"
import { postgresDriver } from "../src/db/postgresDriver.ts"
import { needsPostgres } from "./support/databases.ts"
import { settings } from "./support/settings.ts"

const servers: Array<net.Server> = []
const sockets = new Set<net.Socket>()
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
  for (const socket of sockets) socket.destroy()
  sockets.clear()
})

/** A loopback TCP server of the test's own; `onConnection` decides what each connection gets. */
const listen = async (onConnection: (socket: net.Socket, index: number) => void) => {
  let accepted = 0
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on("error", () => socket.destroy())
    onConnection(socket, accepted++)
  })
  servers.push(server)
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  return (server.address() as net.AddressInfo).port
}

/** Reads the client's TLS request, then closes its end (a FIN, no reset): a host or proxy going away mid-start. */
const closeAfterTheTlsRequest = (socket: net.Socket) => socket.once("data", () => socket.end())

const urlTo = (port: number, database = "postgres") =>
  `postgres://postgres@127.0.0.1:${port}/${database}?sslmode=prefer`

describe("a connection to PostgreSQL cut while it starts", () => {
  it(
    "is failed by the socket factory (CONNECTION_CLOSED), not waited on until a timeout that would never come",
    async () => {
      const port = await listen(closeAfterTheTlsRequest)
      const closes: Array<string> = []
      const connect = socketFactory({
        settings: connectionSettings("DATABASE_URL", settings.postgresUrl(urlTo(port))),
        silenceMillis: 0,
        // An hour: only the close itself can end the wait within the test's time.
        connectTimeoutMillis: 3_600_000,
        onClose: (reason) => closes.push(reason)
      })
      const socket = await connect({ host: ["127.0.0.1"], port: [port] })
      const [error] = await once(socket, "error")
      expect(error).toMatchObject({ code: "CONNECTION_CLOSED" })
      // Not a silent connection closed by the timeout: the far end closed it.
      expect(closes).toEqual([])
    },
    30_000
  )

  it("on the next host of a URL naming several, when the first is cut", async () => {
    const cut = await listen(closeAfterTheTlsRequest)
    const refusing = await listen((socket) => socket.once("data", () => socket.write(Buffer.from("N"))))
    const connect = socketFactory({
      settings: connectionSettings("DATABASE_URL", settings.postgresUrl(urlTo(cut))),
      silenceMillis: 0,
      connectTimeoutMillis: 3_600_000,
      onClose: () => {}
    })
    // The second host answers the TLS request with N (no TLS): prefer goes on in the clear, and the socket is its.
    const socket = await connect({ host: ["127.0.0.1", "127.0.0.1"], port: [cut, refusing] })
    expect((socket as net.Socket).remotePort).toBe(refusing)
    socket.destroy()
  }, 30_000)
})

describe("the pool, when its one connection is cut while it starts", needsPostgres, () => {
  it("connects again and answers, rather than being a connection short for good", async () => {
    const target = new URL(postgresAdminUrl!)
    // The first connection is cut after its TLS request; every later one is forwarded to PostgreSQL.
    const port = await listen((client, index) => {
      if (index === 0) return closeAfterTheTlsRequest(client)
      const upstream = net.connect({ host: target.hostname, port: Number(target.port || 5432) })
      upstream.on("error", () => client.destroy())
      client.on("close", () => upstream.destroy())
      upstream.on("close", () => client.destroy())
      client.pipe(upstream).pipe(client)
    })
    const driver = postgresDriver(
      connectionSettings("DATABASE_URL", settings.postgresUrl(urlTo(port, target.pathname.slice(1) || "postgres"))),
      { poolSize: 1, prepare: true, pipeline: true, silenceMillis: 60_000, onConnectionClosed: () => {} }
    )
    try {
      // The first statement may fail with the cut; a later one is answered on a new connection. Each attempt is
      // bounded by the test's own timeout: a pool that lost its connection never answers at all.
      const answered = await eventually(
        () => driver.query("SELECT 1 AS one", []).then((rows) => rows[0]?.one === 1, () => false),
        20_000,
        50
      )
      expect(answered).toBe(true)
    } finally {
      await driver.close()
    }
  }, 60_000)
})
