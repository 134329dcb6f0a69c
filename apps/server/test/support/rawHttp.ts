import { parseJsonBody } from "@petstore/test-support"
import { request } from "node:http"

/** What came back: a response, or the connection failing before one (e.g. Node closing it on a 431). */
export type RawAnswer =
  | {
    readonly kind: "response"
    readonly status: number
    readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
    readonly text: string
    /** The parsed JSON body, or undefined when there is none or it is not JSON. */
    readonly body: any
  }
  | { readonly kind: "connection-error"; readonly code: string; readonly message: string }

export interface RawRequest {
  readonly method: string
  /** Sent as is: no normalisation, no percent-encoding (unlike fetch). Bytes 0x80–0xff go out as single bytes. */
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer
  /** Milliseconds for the whole exchange; over it the request fails the test rather than hang. */
  readonly timeout?: number
}

/**
 * One HTTP/1.1 exchange over a fresh connection with node:http, which leaves the
 * request target alone, so broken percent-encoding and raw bytes reach the server.
 */
export const rawRequest = (origin: string, options: RawRequest): Promise<RawAnswer> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(origin)
    const timeout = options.timeout ?? 10_000
    const headers: Record<string, string> = { ...options.headers }
    const framed = Object.keys(headers).some((name) => /^(content-length|transfer-encoding)$/i.test(name))
    // Node's client does not chunk a GET, HEAD or DELETE body: unframed, its bytes would read as a second
    // request (and Node would answer that with its own bare 400). The hostile part is the body, not the framing.
    if (options.body !== undefined && !framed) headers["content-length"] = String(Buffer.byteLength(options.body))
    const req = request({
      host: hostname,
      port: Number(port),
      method: options.method,
      path: options.path,
      headers,
      agent: false,
      // Our own client must not refuse to send the hostile request it was asked to send.
      insecureHTTPParser: true
    })
    const timer = setTimeout(() => {
      req.destroy()
      reject(new Error(`${options.method} ${options.path}: no answer within ${timeout} ms`))
    }, timeout)
    req.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      resolve({ kind: "connection-error", code: error.code ?? "UNKNOWN", message: error.message })
    })
    req.on("response", (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        resolve({ kind: "connection-error", code: error.code ?? "UNKNOWN", message: error.message })
      })
      response.on("end", () => {
        clearTimeout(timer)
        const text = Buffer.concat(chunks).toString("utf8")
        resolve({
          kind: "response",
          status: response.statusCode ?? 0,
          headers: response.headers,
          text,
          body: parseJsonBody(text)
        })
      })
    })
    if (options.body !== undefined) req.end(options.body)
    else req.end()
  })
