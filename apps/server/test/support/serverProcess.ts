import { connect } from "node:net"

export {
  ADMIN_TOKEN,
  eventually,
  startServerProcess,
  type StartedProcess,
  waitForExit
} from "@petstore/test-support"

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
