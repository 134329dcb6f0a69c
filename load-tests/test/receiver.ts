import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** One delivery as the receiver saw it: the Standard Webhooks headers and the event's type. */
export interface Delivery {
  readonly id: string | undefined
  readonly type: unknown
  readonly signatures: ReadonlyArray<string>
}

export interface WebhookReceiver {
  readonly url: string
  readonly deliveries: ReadonlyArray<Delivery>
  readonly close: () => Promise<void>
}

/**
 * A webhook receiver on loopback for events.js: answers every POST 204 and keeps what it received. It
 * cannot verify signatures (the secrets are shown to k6 alone); it counts them.
 */
export const startReceiver = async (): Promise<WebhookReceiver> => {
  const deliveries: Array<Delivery> = []
  const server = createServer((request, response) => {
    let body = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => (body += chunk))
    request.on("end", () => {
      let type: unknown
      try {
        type = (JSON.parse(body) as { type?: unknown }).type
      } catch {
        type = undefined
      }
      const signature = request.headers["webhook-signature"]
      deliveries.push({
        id: typeof request.headers["webhook-id"] === "string" ? request.headers["webhook-id"] : undefined,
        type,
        signatures: typeof signature === "string" ? signature.split(" ").filter((part) => part.startsWith("v1,")) : []
      })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    deliveries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
