/**
 * A real webhook receiver for the fleet: an HTTP server in the test's own
 * (root) namespace, listening on the test network's gateway address, which
 * every host reaches over the bridge. It records each delivery as received and
 * whether its answer (always 204) was written out in full, so that a test can
 * tell a duplicate that follows a failed delivery from one that does not.
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedDelivery {
  readonly webhookId: string
  readonly headers: IncomingHttpHeaders
  /** The body exactly as received. */
  readonly body: string
  /** Whether the receiver's 204 was written out in full (false while pending, or if the connection went first). */
  answered: boolean
}

export const startWebhookReceiver = async (address: string) => {
  const received: Array<ReceivedDelivery> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const delivery: ReceivedDelivery = {
        webhookId: String(request.headers["webhook-id"]),
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        answered: false
      }
      received.push(delivery)
      response.on("finish", () => (delivery.answered = true))
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, address, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${address}:${port}/hooks/petstore`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
