import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib"

/**
 * The suite's one way onto the network: node:http rather than fetch, because only node:http says whether a
 * request went out on a reused keep-alive connection (`request.reusedSocket`).
 *
 * That matters on a busy machine. A server closes a keep-alive connection it has kept idle for a while (5 s in
 * Node's defaults); a client whose event loop lags past that still holds the connection as idle, sends its next
 * request on it, and gets a reset before any answer. Nothing reached the service, so a request that is safe to
 * repeat is sent once more, on a new connection, as HTTP clients do (RFC 9110 §9.2.2; Go's and Node's own
 * documented practice). A request that is not safe to repeat never takes that chance: it goes out on a
 * connection of its own (a POST on a reused connection was reset at load 22, and could not be repeated).
 * Anything else is reported as it happened, naming the cause.
 */

export interface WireRequest {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
  readonly signal: AbortSignal
}

export interface WireResponse {
  readonly status: number
  readonly statusText: string
  readonly headers: Headers
  readonly text: string
}

/**
 * The largest body the suite reads (decoded). Nothing the API answers comes near it; a service that sends more
 * (an endless stream, a decompression bomb) would otherwise fill the suite's memory, so the answer counts as broken.
 */
export const MAX_BODY_BYTES = 8 * 1024 * 1024

/** Thrown when the network gives no HTTP answer at all; the message names the cause. */
export class TransportError extends Error {
  /** Nothing listens at the address, or the host does not resolve: a wrong URL rather than a broken service. */
  readonly nothingThere: boolean
  constructor(message: string, nothingThere = false) {
    super(message)
    this.nothingThere = nothingThere
  }
}

/** Errors that mean no service was reached at all. */
const NOTHING_THERE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

/** Safe methods (RFC 9110 §9.2.1): repeating one cannot change what the service holds, nor what a check sees. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"])

/** Errors that mean the connection went away before any part of an answer came back. */
const CLOSED_BEFORE_ANSWER = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"])

const agents = {
  "http:": new HttpAgent({ keepAlive: true }),
  "https:": new HttpsAgent({ keepAlive: true })
}

const CAUSES: Readonly<Record<string, string>> = {
  ECONNRESET: "the connection was reset before any answer",
  EPIPE: "the connection was closed while the request was being sent",
  ECONNABORTED: "the connection was aborted before any answer",
  ECONNREFUSED: "the connection was refused: nothing listens there",
  ENOTFOUND: "the host name does not resolve",
  EAI_AGAIN: "the host name could not be resolved now",
  ETIMEDOUT: "connecting timed out",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable"
}

/** Bodies come back decoded, as a browser's or fetch's would, whatever `Content-Encoding` the service chose. */
const decode = (body: Buffer, encoding: string | undefined): Buffer => {
  const bounded = { maxOutputLength: MAX_BODY_BYTES }
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return gunzipSync(body, bounded)
    case "deflate":
      return inflateSync(body, bounded)
    case "br":
      return brotliDecompressSync(body, bounded)
    default:
      return body
  }
}

const headersOf = (response: IncomingMessage): Headers => {
  const headers = new Headers()
  for (let i = 0; i < response.rawHeaders.length; i += 2) {
    headers.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!)
  }
  return headers
}

class TooLarge extends Error {
  override readonly message = `the body is over ${
    MAX_BODY_BYTES / 1024 / 1024
  } MiB (decoded), more than the suite reads`
}

type Attempt =
  | { readonly _tag: "Answered"; readonly response: WireResponse }
  | {
    readonly _tag: "Failed"
    readonly error: Error & { code?: string }
    readonly reused: boolean
    readonly answered: boolean
  }

/** One try; `fresh` asks for a connection of its own rather than one the pool keeps. */
const attempt = (wire: WireRequest, url: URL, fresh: boolean): Promise<Attempt> =>
  new Promise((resolve) => {
    const protocol = url.protocol === "https:" ? "https:" : "http:"
    let reused = false
    let answered = false
    const request = (protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: wire.method,
      headers: wire.headers,
      agent: fresh ? false : agents[protocol],
      signal: wire.signal
    })
    request.once("socket", () => {
      reused = request.reusedSocket
    })
    const fail = (error: Error & { code?: string }) => resolve({ _tag: "Failed", error, reused, answered })
    request.on("error", fail)
    // A timeout or cancellation while the body trickles in ends the answer too, not only the wait for its head.
    wire.signal.addEventListener("abort", () => fail(new Error("aborted")), { once: true })
    request.once("response", (response) => {
      answered = true
      const chunks: Array<Buffer> = []
      let received = 0
      response.on("data", (chunk: Buffer) => {
        received += chunk.length
        if (received > MAX_BODY_BYTES) {
          fail(new TooLarge())
          request.destroy()
          return
        }
        chunks.push(chunk)
      })
      response.on("error", fail)
      response.once("end", () => {
        try {
          const body = decode(Buffer.concat(chunks), response.headers["content-encoding"])
          resolve({
            _tag: "Answered",
            response: {
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? "",
              headers: headersOf(response),
              text: new TextDecoder().decode(body)
            }
          })
        } catch (error) {
          fail((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" ? new TooLarge() : error as Error)
        }
      })
    })
    request.end(wire.body)
  })

const describeFailure = (wire: WireRequest, failed: Extract<Attempt, { _tag: "Failed" }>, retried: boolean) => {
  if (wire.signal.aborted) {
    const reason = wire.signal.reason as { name?: string } | undefined
    return reason?.name === "TimeoutError" ? "no answer in time (the request timed out)" : "the request was cancelled"
  }
  if (failed.error instanceof TooLarge) return failed.error.message
  const code = failed.error.code
  const cause = code === undefined ? failed.error.message : `${CAUSES[code] ?? failed.error.message} (${code})`
  if (failed.answered) return `the answer broke off: ${cause}`
  if (retried) return `${cause}, on a new connection too (the first try was on a reused keep-alive connection)`
  if (!failed.reused) return cause
  return `${cause}, on a reused keep-alive connection`
}

/**
 * Sends one request; a safe one that a reused connection lost before any answer is sent once more, and one that
 * is not safe to repeat takes a connection of its own.
 */
export const send = async (wire: WireRequest): Promise<WireResponse> => {
  const url = new URL(wire.url)
  const first = await attempt(wire, url, !SAFE_METHODS.has(wire.method.toUpperCase()))
  if (first._tag === "Answered") return first.response
  const repeatable = first.reused && !first.answered && !wire.signal.aborted &&
    CLOSED_BEFORE_ANSWER.has(first.error.code ?? "") && SAFE_METHODS.has(wire.method.toUpperCase())
  if (!repeatable) {
    throw new TransportError(
      describeFailure(wire, first, false),
      !wire.signal.aborted && NOTHING_THERE.has(first.error.code ?? "")
    )
  }
  const second = await attempt(wire, url, true)
  if (second._tag === "Answered") return second.response
  throw new TransportError(describeFailure(wire, second, true))
}
