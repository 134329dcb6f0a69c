import type { Duplex } from "node:stream"
import { afterPendingWrites, tapWrites } from "./postgresInternals.ts"

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
 * - something is owed and no byte has arrived for `silenceMillis` ("silent"), or for `startUpMillis` while
 *   its start-up is owed (the connect timeout, which may be shorter than the statement timeout), or
 * - a `ReadyForQuery` arrives when nothing is owed ("out of protocol": the
 *   answers no longer belong to the questions), or
 * - a statement on it timed out ("timed_out", closed through the session's key
 *   from `BackendKeyData`): postgres.js can itself lose track of a connection
 *   whose answers were mixed up, owing nothing on the wire while a statement
 *   waits on it forever, which a pooler that desynchronises showed.
 *
 * It sees the protocol in the clear: TLS, when used, is below it. What it
 * relies on in postgres.js (how it writes to the socket) is in `postgresInternals.ts`.
 */

export type CloseReason = "silent" | "out_of_protocol" | "timed_out"

/**
 * The open watched connections of one pool by their session's key: the process
 * id and secret PostgreSQL (or a pooler, for its client connection) sends in
 * `BackendKeyData`, unique while the session lives. postgres.js marks each
 * statement with them, so a statement that timed out can close its connection.
 */
export class Sessions {
  private readonly byKey = new Map<string, (reason: CloseReason) => void>()

  add(pid: number, secret: number, close: (reason: CloseReason) => void): () => void {
    const key = `${pid}:${secret}`
    this.byKey.set(key, close)
    return () => this.byKey.get(key) === close && this.byKey.delete(key)
  }

  /** Closes the session's connection if it is still open; true if it was. */
  close(pid: number, secret: number, reason: CloseReason): boolean {
    const close = this.byKey.get(`${pid}:${secret}`)
    close?.(reason)
    return close !== undefined
  }

  get size() {
    return this.byKey.size
  }
}

/**
 * Reads message boundaries from a byte stream: a type byte (none for the
 * client's first message) and a 4-byte length. Bodies are skipped, except those
 * of `kept` types (small ones), which `onBody` receives.
 */
class Framer {
  private header = Buffer.alloc(0)
  private skip = 0
  private untyped: boolean
  private body: Array<Uint8Array> | undefined
  private keptType = 0
  private readonly onMessage: (type: number) => void
  private readonly kept: ReadonlySet<number>
  private readonly onBody: (type: number, body: Buffer) => void

  constructor(
    untyped: boolean,
    onMessage: (type: number) => void,
    kept: ReadonlySet<number> = new Set(),
    onBody: (type: number, body: Buffer) => void = () => {}
  ) {
    this.untyped = untyped
    this.onMessage = onMessage
    this.kept = kept
    this.onBody = onBody
  }

  push(chunk: Uint8Array) {
    let at = 0
    while (at < chunk.length) {
      if (this.skip > 0) {
        const taken = Math.min(this.skip, chunk.length - at)
        this.body?.push(chunk.subarray(at, at + taken))
        this.skip -= taken
        at += taken
        if (this.skip === 0 && this.body !== undefined) this.keep()
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
      if (this.kept.has(type)) {
        this.body = []
        this.keptType = type
        if (this.skip === 0) this.keep()
      }
    }
  }

  private keep() {
    const body = Buffer.concat(this.body!)
    this.body = undefined
    this.onBody(this.keptType, body)
  }
}

const SYNC = 0x53 // S
const QUERY = 0x51 // Q
const FLUSH = 0x48 // H
const READY_FOR_QUERY = 0x5a // Z
const BACKEND_KEY_DATA = 0x4b // K

/** Watches `socket` (already connected, in the clear) from the client's first byte on; returns it. */
export const watchAnswers = <S extends Duplex>(
  socket: S,
  silenceMillis: number,
  onClose: (reason: CloseReason) => void,
  sessions?: Sessions,
  startUpMillis = silenceMillis
): S => {
  let owed = 0
  let flushOwed = false
  // Until the first ReadyForQuery: the start-up message's answer is owed, and the connect timeout bounds it.
  let startUpOwed = false
  const bound = () => startUpOwed ? Math.min(silenceMillis, startUpMillis) : silenceMillis
  // When the last byte arrived, or the wait began; the timer checks it rather than being re-armed on every chunk.
  let heardAt = 0
  let timer: NodeJS.Timeout | undefined
  let closing = false
  const close = (reason: CloseReason) => {
    clearTimeout(timer)
    if (closing || socket.destroyed) return
    closing = true
    onClose(reason)
    // Once postgres.js's deferred writes have run.
    afterPendingWrites(() => socket.destroy())
  }
  const check = () => {
    timer = undefined
    if (owed === 0 && !flushOwed) return
    const waited = performance.now() - heardAt
    if (waited >= bound()) return close("silent")
    timer = setTimeout(check, bound() - waited)
    timer.unref()
  }
  const sent = new Framer(true, (type) => {
    // The start-up message (untyped) is answered by a ReadyForQuery too.
    const counted = type === SYNC || type === QUERY || type === -1
    if (type === -1) startUpOwed = true
    if (counted || type === FLUSH) {
      if (owed === 0 && !flushOwed) heardAt = performance.now()
      if (counted) owed++
      else flushOwed = true
      if (timer === undefined) {
        timer = setTimeout(check, bound())
        timer.unref()
      }
    }
  })
  const received = new Framer(
    false,
    (type) => {
      if (type !== READY_FOR_QUERY) {
        // Answers come in order: once every Sync before it is answered, the next message answers the Flush.
        if (owed === 0) flushOwed = false
        return
      }
      if (owed === 0) return close("out_of_protocol")
      owed--
      startUpOwed = false
    },
    new Set([BACKEND_KEY_DATA]),
    (_type, body) => {
      if (body.length < 8 || sessions === undefined) return
      const forget = sessions.add(body.readUInt32BE(0), body.readUInt32BE(4), close)
      socket.once("close", forget)
    }
  )
  tapWrites(socket, (chunk) => sent.push(chunk))
  socket.on("data", (chunk: Buffer) => {
    heardAt = performance.now()
    received.push(chunk)
  })
  socket.once("close", () => clearTimeout(timer))
  return socket
}
