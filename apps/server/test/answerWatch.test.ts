/**
 * The watch files each connection under the session key PostgreSQL sends in
 * `BackendKeyData`, however the bytes arrive, so that a statement that timed out
 * closes its own connection (and only it); a closed connection leaves the file.
 */
import { Duplex } from "node:stream"
import { afterEach, describe, expect, it, vi } from "vitest"
import { type CloseReason, Sessions, watchAnswers } from "../src/db/answerWatch.ts"

const message = (type: string, body: Buffer) => {
  const header = Buffer.alloc(5)
  header.write(type, 0, "latin1")
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}
const int32s = (...values: Array<number>) => {
  const body = Buffer.alloc(values.length * 4)
  values.forEach((value, index) => body.writeUInt32BE(value, index * 4))
  return body
}

/** A socket whose writes go nowhere and whose answers the test pushes. */
const fakeSocket = () => new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() })

const watched = (sessions: Sessions) => {
  const socket = fakeSocket()
  const reasons: Array<CloseReason> = []
  watchAnswers(socket, 60_000, (reason) => reasons.push(reason), sessions)
  return { socket, reasons }
}

const startUpAnswer = (pid: number, secret: number) =>
  Buffer.concat([message("R", int32s(0)), message("K", int32s(pid, secret)), message("Z", Buffer.from("I"))])

const closed = (socket: Duplex) =>
  new Promise<void>((resolve) => socket.closed ? resolve() : socket.once("close", () => resolve()))

describe("a watched connection's session key", () => {
  it("is read whole however the answer is split, and closes that connection alone, counted as timed_out", async () => {
    const sessions = new Sessions()
    const first = watched(sessions)
    const second = watched(sessions)
    first.socket.write(Buffer.from([0, 0, 0, 8, 0, 3, 0, 0]))
    second.socket.write(Buffer.from([0, 0, 0, 8, 0, 3, 0, 0]))
    // One byte at a time: the key's eight bytes cross every boundary.
    for (const byte of startUpAnswer(4242, 0xdeadbeef)) first.socket.emit("data", Buffer.from([byte]))
    second.socket.emit("data", startUpAnswer(4243, 7))
    expect(sessions.size).toBe(2)

    expect(sessions.close(4242, 0xdeadbeef, "timed_out")).toBe(true)
    await closed(first.socket)
    expect(first.reasons).toEqual(["timed_out"])
    expect(second.socket.destroyed).toBe(false)
    expect(second.reasons).toEqual([])
    expect(sessions.size).toBe(1)
    // A key nobody holds (a session already gone, a wrong secret) closes nothing.
    expect(sessions.close(4242, 0xdeadbeef, "timed_out")).toBe(false)
    expect(sessions.close(4243, 8, "timed_out")).toBe(false)
    expect(second.socket.destroyed).toBe(false)
  })

  it("is forgotten when its connection closes for any reason", async () => {
    const sessions = new Sessions()
    const { socket } = watched(sessions)
    socket.emit("data", startUpAnswer(1, 2))
    expect(sessions.size).toBe(1)
    const closing = closed(socket)
    socket.destroy()
    await closing
    expect(sessions.size).toBe(0)
  })
})

describe("a watched connection's start-up", () => {
  afterEach(() => void vi.useRealTimers())
  const STARTUP_MESSAGE = Buffer.from([0, 0, 0, 8, 0, 3, 0, 0])

  /** Statements may be silent for a minute; a start-up, for the connect timeout's 5 s. */
  const watchedStartUp = () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "performance"] })
    const socket = fakeSocket()
    const reasons: Array<CloseReason> = []
    watchAnswers(socket, 60_000, (reason) => reasons.push(reason), new Sessions(), 5_000)
    socket.write(STARTUP_MESSAGE)
    return { socket, reasons }
  }

  it("unanswered, is closed as silent at the connect timeout, not the statements' longer bound", async () => {
    // postgres.js's own connect timeout would otherwise close it, uncounted in database_connections_closed_total.
    const { reasons, socket } = watchedStartUp()
    await vi.advanceTimersByTimeAsync(4_999)
    expect(reasons).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(reasons).toEqual(["silent"])
    await vi.runAllTimersAsync()
    expect(socket.destroyed).toBe(true)
  })

  it("once answered, leaves the connection to the statements' bound", async () => {
    const { reasons, socket } = watchedStartUp()
    socket.emit("data", startUpAnswer(7, 8))
    socket.write(message("Q", Buffer.from("SELECT pg_sleep(30)\0")))
    await vi.advanceTimersByTimeAsync(59_999)
    expect(reasons).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(reasons).toEqual(["silent"])
  })
})
