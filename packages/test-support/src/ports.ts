import { once } from "node:events"
import { connect, createServer } from "node:net"

/** A port nobody listens on right now. */
export const freePort = async (): Promise<number> => {
  const probe = createServer().listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as { port: number }
  probe.close()
  await once(probe, "close")
  return port
}

/** How a TCP connection attempt to the port ended: accepted, or refused with an error code. */
export const tryConnect = (port: number, timeoutMs = 2_000): Promise<"accepted" | string> =>
  new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port })
    const timer = setTimeout(() => {
      socket.destroy()
      resolve("timeout")
    }, timeoutMs)
    socket.once("connect", () => {
      clearTimeout(timer)
      socket.destroy()
      resolve("accepted")
    })
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      resolve(error.code ?? "error")
    })
  })
