import { type ApiError, type ErrorDetail, errorBodyOf, InvalidRequest, PayloadTooLarge } from "@petstore/contract"
import { randomUUID } from "node:crypto"
import { type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"

/** What Node's HTTP parser attaches to the error of a request it cannot parse. */
interface ParseError extends Error {
  readonly code?: string
  readonly reason?: string
  readonly bytesParsed?: number
  readonly rawPacket?: Buffer
}

/**
 * How long a connection stays open after its error answer, reading and
 * dropping whatever the client still sends: closing with unread input makes
 * the kernel reset the connection, and a reset can destroy the answer before
 * the client reads it. A client that closes its side ends it sooner.
 */
const LINGER_MS = 5_000

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * The header whose value the parser stopped in, when the chunk it parsed holds
 * the whole line up to there; else none, rather than a truncated name.
 */
const offendingHeader = (error: ParseError): string | undefined => {
  const { bytesParsed, rawPacket } = error
  if (rawPacket === undefined || bytesParsed === undefined || bytesParsed <= 0) return undefined
  const lineStart = rawPacket.lastIndexOf("\n", bytesParsed - 1)
  if (lineStart < 0) return undefined
  const line = rawPacket.subarray(lineStart + 1, bytesParsed).toString("latin1")
  const colon = line.indexOf(":")
  // No colon yet: the parser stopped in the name, which is then no name to show.
  if (colon < 0) return undefined
  const name = line.slice(0, colon)
  return TOKEN.test(name) ? name.toLowerCase() : undefined
}

const detailOf = (error: ParseError): ErrorDetail => {
  const message = error.reason ?? "Malformed request"
  switch (error.code) {
    case "HPE_INVALID_HEADER_TOKEN": {
      const header = offendingHeader(error)
      return { path: header === undefined ? "header" : `header.${header}`, message }
    }
    case "HPE_INVALID_URL":
      return { path: "path", message }
    case "HPE_INVALID_METHOD":
      return { path: "method", message }
    case "HPE_INVALID_CHUNK_SIZE":
      return { path: "body", message }
    default:
      return { path: "request", message }
  }
}

/**
 * A whole HTTP/1.1 answer with the error's body, after which the connection
 * closes. Written by hand: Node asks for bytes on the socket here, not for a response.
 * It carries a new `X-Request-Id`, as every answer carries one: the parser gives
 * no headers of a request it refuses, so a client's own id cannot be echoed.
 */
const errorAnswer = (error: ApiError, head: boolean): string => {
  // No route (nor requestLog) sees this request, so its id is made here, for the header and the body alike.
  const requestId = randomUUID()
  const json = JSON.stringify({ ...errorBodyOf(error), requestId })
  return [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`,
    `Date: ${new Date().toUTCString()}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(json)}`,
    "Cache-Control: no-store",
    "X-Content-Type-Options: nosniff",
    `X-Request-Id: ${requestId}`,
    "Connection: close",
    "",
    // An answer to HEAD has no body (RFC 9110 §9.3.2): a client reads one as the start of the next answer.
    head ? "" : json
  ].join("\r\n")
}

/** Whether the refused request is a HEAD, when the chunk the parser stopped in starts with its request line. */
const isHeadRequest = (error: ParseError) => error.rawPacket?.subarray(0, 5).toString("latin1") === "HEAD "

/**
 * Refusals the Error table has no code for keep Node's own bare answer and
 * abrupt close: lingering would only give a client that floods or stalls more time.
 */
const nodesOwnStatus: Readonly<Record<string, number>> = { HPE_HEADER_OVERFLOW: 431, ERR_HTTP_REQUEST_TIMEOUT: 408 }

const answerFor = (error: ParseError): string => {
  switch (error.code) {
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return errorAnswer(
        new PayloadTooLarge({ message: "The chunk extensions of the request body are over the limit" }),
        false
      )
    default: {
      const detail = detailOf(error)
      return errorAnswer(
        new InvalidRequest({ message: `Invalid request. ${detail.path}: ${detail.message}`, details: [detail] }),
        isHeadRequest(error)
      )
    }
  }
}

/** Connections already answered: the parser keeps failing on whatever else arrives, and that is not news. */
const answered = new WeakSet<Duplex>()

/** Node keeps the response being written on a connection on its socket; later ones wait in line behind it. */
const responseInProgress = (socket: Duplex): ServerResponse | undefined => {
  const response = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage
  return response && !response.writableFinished ? response : undefined
}

/**
 * Node's `clientError` hook, for requests its HTTP parser refuses before any
 * route sees them (a control character in a header value, a raw byte in the
 * path, duplicate Content-Length, …). Node's default answers a bare 400 and
 * destroys the socket; this answers with the documented Error body and closes
 * the connection by ending it, not by resetting it. Answers owed to earlier,
 * well-formed requests on the connection go first.
 */
export const answerClientError = (error: ParseError, socket: Duplex): void => {
  if (answered.has(socket)) return
  answered.add(socket)
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const nodesOwn = nodesOwnStatus[error.code ?? ""]
  if (nodesOwn !== undefined) {
    if (!responseInProgress(socket)?.headersSent) {
      socket.write(`HTTP/1.1 ${nodesOwn} ${STATUS_CODES[nodesOwn]}\r\nConnection: close\r\n\r\n`)
    }
    socket.destroy()
    return
  }
  const answerWhenDue = () => {
    const inProgress = responseInProgress(socket)
    if (inProgress?.req.complete) {
      // An earlier request, read whole, is still being answered: the error belongs to the next one.
      inProgress.once("finish", answerWhenDue)
      return
    }
    if (inProgress?.headersSent) {
      // The error is in the body of a request whose answer has begun: nothing can be said any more.
      socket.destroy()
      return
    }
    if (!socket.writable) return
    socket.end(answerFor(error))
    // Keep reading (and dropping) the rest of the request, until the client closes or the linger ends.
    socket.resume()
    const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref()
    socket.once("close", () => clearTimeout(linger))
  }
  answerWhenDue()
}
