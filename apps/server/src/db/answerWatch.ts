import type { Duplex } from "node:stream"

/**
 * Closes a connection to PostgreSQL that stopped answering, so that postgres.js
 * replaces it instead of queueing statements behind an answer that will never
 * come (a pooler that lost track of it, a proxy or network that swallowed it, a
 * primary that froze). postgres.js keeps such a connection forever: a statement
 * that times out is given up by the request, not by the connection.
 *
 * It counts requests for an answer, as the protocol frames them: every `Sync`
 * and simple `Query` the client sends (and the start-up message) is answered
 * by exactly one `ReadyForQuery`. Pipelined statements just raise the count.
 * A `Flush` (postgres.js sends Parse, Describe, Flush to learn a new
 * statement's parameter types) is answered by some message, with no
 * `ReadyForQuery`: it is owed until a message arrives after the answers to
 * every `Sync` before it (a pooler that releases the server connection at the
 * `ReadyForQuery` before it can lose exactly this answer).
 * A connection is closed when
 * - something is owed and no byte has arrived for `silenceMillis` ("silent"), or
 * - a `ReadyForQuery` arrives when nothing is owed ("out of protocol": the
 *   answers no longer belong to the questions).
 *
 * It sees the protocol in the clear: TLS, when used, is below it.
 */

export type CloseReason = "silent" | "out_of_protocol"

/** Reads message boundaries from a byte stream: a type byte (none for the client's first message) and a 4-byte length. */
class Framer {
  private header = Buffer.alloc(0)
  private skip = 0
  private untyped: boolean
  private readonly onMessage: (type: number) => void

  constructor(untyped: boolean, onMessage: (type: number) => void) {
    this.untyped = untyped
    this.onMessage = onMessage
  }

  push(chunk: Uint8Array) {
    let at = 0
    while (at < chunk.length) {
      if (this.skip > 0) {
        const taken = Math.min(this.skip, chunk.length - at)
        this.skip -= taken
        at += taken
        continue
      }
      const headerLength = this.untyped ? 4 : 5
      const needed = headerLength - this.header.length
      const part = chunk.subarray(at, at + needed)
      this.header = this.header.length === 0 ? Buffer.from(part) : Buffer.concat([this.header, part])
      at += part.length
      if (this.header.length < headerLength) return
      const length = this.header.readInt32BE(headerLength - 4)
      const type = this.untyped ? -1 : this.header[0]!
      this.untyped = false
      this.header = Buffer.alloc(0)
      this.skip = length - 4
      this.onMessage(type)
    }
  }
}

const SYNC = 0x53 // S
const QUERY = 0x51 // Q
const FLUSH = 0x48 // H
const READY_FOR_QUERY = 0x5a // Z

/** Watches `socket` (already connected, in the clear) from the client's first byte on; returns it. */
export const watchAnswers = <S extends Duplex>(
  socket: S,
  silenceMillis: number,
  onClose: (reason: CloseReason) => void
): S => {
  let owed = 0
  let flushOwed = false
  // When the last byte arrived, or the wait began; the timer checks it rather than being re-armed on every chunk.
  let heardAt = 0
  let timer: NodeJS.Timeout | undefined
  let closing = false
  const close = (reason: CloseReason) => {
    clearTimeout(timer)
    if (closing || socket.destroyed) return
    closing = true
    onClose(reason)
    // Once postgres.js's deferred writes have run (see `afterPendingWrites`).
    setImmediate(() => setImmediate(() => socket.destroy()))
  }
  const check = () => {
    timer = undefined
    if (owed === 0 && !flushOwed) return
    const waited = performance.now() - heardAt
    if (waited >= silenceMillis) return close("silent")
    timer = setTimeout(check, silenceMillis - waited)
    timer.unref()
  }
  const sent = new Framer(true, (type) => {
    // The start-up message (untyped) is answered by a ReadyForQuery too.
    const counted = type === SYNC || type === QUERY || type === -1
    if (counted || type === FLUSH) {
      if (owed === 0 && !flushOwed) heardAt = performance.now()
      if (counted) owed++
      else flushOwed = true
      if (timer === undefined) {
        timer = setTimeout(check, silenceMillis)
        timer.unref()
      }
    }
  })
  const received = new Framer(false, (type) => {
    if (type !== READY_FOR_QUERY) {
      // Answers come in order: once every Sync before it is answered, the next message answers the Flush.
      if (owed === 0) flushOwed = false
      return
    }
    if (owed === 0) return close("out_of_protocol")
    owed--
  })
  const write = socket.write.bind(socket) as (...args: Array<unknown>) => boolean
  socket.write = ((chunk: unknown, ...rest: Array<unknown>) => {
    if (chunk instanceof Uint8Array) sent.push(chunk)
    return write(chunk, ...rest)
  }) as S["write"]
  socket.on("data", (chunk: Buffer) => {
    heardAt = performance.now()
    received.push(chunk)
  })
  socket.once("close", () => clearTimeout(timer))
  return socket
}
