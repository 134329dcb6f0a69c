/**
 * A real webhook receiver: an HTTP server on `host` (loopback unless told, e.g.
 * a fleet network's gateway) that records every request as received and
 * answers as `answerWith` says (200 by default). It records whether each answer
 * was written out in full, so that a test can tell a duplicate that follows a
 * failed delivery from one that does not.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedWebhook {
  /** The `webhook-id` header, the same on every retry of one event. */
  readonly webhookId: string | undefined
  readonly headers: IncomingHttpHeaders
  /** The body exactly as received. */
  readonly body: string
  readonly path: string
  /** Whether the receiver's answer was written out in full (false while pending, or if the connection went first). */
  answered: boolean
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>

export const startWebhookReceiver = async (host = "127.0.0.1") => {
  const received: Array<ReceivedWebhook> = []
  let answer: (request: ReceivedWebhook, response: ServerResponse) => void = (_request, response) =>
    response.writeHead(200).end("ok")
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const id = request.headers["webhook-id"]
      const webhook: ReceivedWebhook = {
        webhookId: typeof id === "string" ? id : undefined,
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        path: request.url ?? "/",
        answered: false
      }
      received.push(webhook)
      response.on("finish", () => (webhook.answered = true))
      answer(webhook, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host}:${port}/hooks/petstore`,
    port,
    received,
    answerWith: (next: typeof answer) => {
      answer = next
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
