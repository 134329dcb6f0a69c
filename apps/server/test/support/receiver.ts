import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedWebhook {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly path: string
}

/** A real HTTP receiver on loopback: records every request, answers as `answer` says (200 by default). */
export const startReceiver = async () => {
  const received: Array<ReceivedWebhook> = []
  let answer: (request: ReceivedWebhook, response: ServerResponse) => void = (_request, response) => response.writeHead(200).end("ok")
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const webhook = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), path: request.url ?? "/" }
      received.push(webhook)
      answer(webhook, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
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

/** Waits in real time, a bounded while, for a condition the server reaches on its own. */
export const waitFor = async <A>(check: () => A | undefined | false, what: string, timeoutMillis = 60_000): Promise<A> => {
  const deadline = Date.now() + timeoutMillis
  for (;;) {
    const value = check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
