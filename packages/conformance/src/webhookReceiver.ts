import { once } from "node:events"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"

/** One POST the receiver got: its headers (names in lower case), its body as received, and the status it answered. */
export interface Delivery {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  readonly json: unknown
  readonly answered: number
}

export interface Receiver {
  /** The URL to register: the public URL (or the listening address) and a path of this run. */
  readonly url: string
  readonly deliveries: () => ReadonlyArray<Delivery>
  /** Answer `status` to deliveries whose body satisfies `matches`, `times` times (default: every time); 204 otherwise. */
  readonly answer: (matches: (body: string) => boolean, status: number, times?: number) => void
  readonly close: () => Promise<void>
}

/** Deliveries kept, and the most of a body read: what a deployment sends the receiver stays bounded. */
const MAX_DELIVERIES = 2_000
const MAX_BODY_BYTES = 256 * 1024

/** `host:port`, `[v6]:port` or `:port`: where `--webhook-listen` binds. */
export const parseListen = (value: string): { readonly host: string; readonly port: number } | undefined => {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(value.trim())
  if (match === null || Number(match[3]) > 65_535) return undefined
  return { host: match[1] ?? (match[2] || "127.0.0.1"), port: Number(match[3]) }
}

const readBody = async (request: IncomingMessage) => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size <= MAX_BODY_BYTES) chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString("utf8")
}

/**
 * A receiver of webhook deliveries (node:http) on `listen`, at the path `/petstore-conformance/<runId>`;
 * a deployment reaches it at `publicUrl` (a tunnel or proxy that forwards there), or else at the listening
 * address itself.
 */
export const startReceiver = async (
  listen: { readonly host: string; readonly port: number },
  publicUrl: string | undefined,
  runId: string
): Promise<Receiver> => {
  const path = `/petstore-conformance/${runId}`
  const deliveries: Array<Delivery> = []
  const rules: Array<{ readonly matches: (body: string) => boolean; readonly status: number; remaining: number }> = []
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const pathname = new URL(request.url ?? "/", "http://receiver").pathname
      if (request.method !== "POST" || !pathname.endsWith(path)) {
        response.writeHead(404).end()
        return
      }
      const rule = rules.find((candidate) => candidate.remaining > 0 && candidate.matches(body))
      if (rule !== undefined) rule.remaining--
      const status = rule?.status ?? 204
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const headers = Object.fromEntries(
        Object.entries(request.headers).map((
          [name, value]
        ) => [name, Array.isArray(value) ? value.join(", ") : value ?? ""])
      )
      if (deliveries.length < MAX_DELIVERIES) deliveries.push({ headers, body, json, answered: status })
      response.writeHead(status).end()
    }, () => response.destroy())
  })
  server.listen(listen.port, listen.host)
  await Promise.race([
    once(server, "listening"),
    once(server, "error").then(([error]) => Promise.reject(error as Error))
  ])
  const { port } = server.address() as AddressInfo
  const listening = listen.host.includes(":") ? `[${listen.host}]` : listen.host
  const shown = listening === "0.0.0.0" ? "127.0.0.1" : listening === "[::]" ? "[::1]" : listening
  return {
    url: `${(publicUrl ?? `http://${shown}:${port}`).replace(/\/+$/, "")}${path}`,
    deliveries: () => deliveries,
    answer: (matches, status, times = Number.POSITIVE_INFINITY) => {
      rules.push({ matches, status, remaining: times })
    },
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, "close")
    }
  }
}
