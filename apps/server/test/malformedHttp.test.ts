/**
 * Requests Node's HTTP parser refuses before any route sees them. They go out
 * as raw bytes over TCP: Node's own client refuses to send most of them.
 */
import fc from "fast-check"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/testServer.ts"

interface ParsedAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** How a connection ended for the client: "fin" when the server closed it in order, else the socket error's code. */
type Ending = "fin" | string

/**
 * Writes the bytes as they are over a fresh connection and collects
 * everything the server sends until the connection is over.
 */
const exchange = (port: number, bytes: string): Promise<{ received: Buffer; ending: Ending }> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let ending: Ending = "closed without FIN"
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(bytes, "latin1")
    })
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("end", () => (ending = "fin"))
    socket.on("error", (error: NodeJS.ErrnoException) => (ending = error.code ?? error.message))
    socket.on("close", () => resolve({ received: Buffer.concat(chunks), ending }))
  })

/** Splits what came back into HTTP/1.1 answers (bodies framed by Content-Length). */
const parseAnswers = (received: Buffer): Array<ParsedAnswer> => {
  const answers: Array<ParsedAnswer> = []
  let rest = received
  while (rest.length > 0) {
    const headEnd = rest.indexOf("\r\n\r\n")
    if (headEnd < 0) throw new Error(`an unframed answer: ${JSON.stringify(rest.toString("latin1"))}`)
    const [statusLine, ...lines] = rest.subarray(0, headEnd).toString("latin1").split("\r\n")
    const headers: Record<string, string> = {}
    for (const line of lines) {
      headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim()
    }
    const length = Number(headers["content-length"] ?? 0)
    const bodyStart = headEnd + 4
    answers.push({
      status: Number(statusLine!.split(" ")[1]),
      headers,
      body: rest.subarray(bodyStart, bodyStart + length).toString("utf8")
    })
    rest = rest.subarray(bodyStart + length)
  }
  return answers
}

const expectInvalidRequest = (answer: ParsedAnswer | undefined, detailPath: string) => {
  expect(answer?.status).toBe(400)
  expect(answer!.headers["content-type"]).toMatch(/^application\/json/)
  expect(answer!.headers["connection"]).toBe("close")
  expect(answer!.headers["cache-control"]).toBe("no-store")
  expect(answer!.headers["x-content-type-options"]).toBe("nosniff")
  // Every answer carries a request id (docs/operations.md, "Logs"), this one included.
  expect(answer!.headers["x-request-id"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  expect(JSON.parse(answer!.body)).toEqual({
    code: "invalid_request",
    message: expect.stringMatching(/./),
    status: 400,
    details: [{ path: detailPath, message: expect.stringMatching(/./) }],
    requestId: answer!.headers["x-request-id"]
  })
  expect(answer!.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
}

describe("requests the HTTP parser refuses", () => {
  let server: RunningServer
  let port: number
  let key: string
  const pet = JSON.stringify({ name: "Rex", categoryId: 1 })
  const createPet = (extraHeader: string) =>
    `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${pet.length}\r\n${extraHeader}\r\n\r\n${pet}`

  beforeAll(async () => {
    server = await startServer("pglite")
    port = Number(new URL(server.baseUrl).port)
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it.each<[string, () => string, string]>([
    ["a control character in a header value", () => createPet("Idempotency-Key: a\x01b"), "header.idempotency-key"],
    ["DEL in a header value", () => createPet("X-Note: a\x7fb"), "header.x-note"],
    ["NUL in a header value", () => createPet("X-Note: a\x00b"), "header.x-note"],
    ["a control character in a header name", () => createPet("X-No\x01te: a"), "header"],
    [
      "a raw byte over 0x7f in the path",
      () => `GET /v1/p\xe9ts HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      "path"
    ],
    ["two Content-Length headers", () => createPet(`Content-Length: ${pet.length + 1}`), "request"],
    [
      "a malformed chunk in a body the handler is already reading",
      () =>
        `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n5\r\n{"nam\r\nzz\r\n`,
      "body"
    ]
  ])("%s: 400 with the Error body naming it, then the connection closes in order", async (_, request, detailPath) => {
    const { received, ending } = await exchange(port, request())
    const answers = parseAnswers(received)
    expect(answers).toHaveLength(1)
    expectInvalidRequest(answers[0], detailPath)
    expect(ending).toBe("fin")
  })

  it("any control character in any header's value: 400 with the Error body naming that header", async () => {
    // CR, LF and HTAB are left out: they frame or belong in header lines rather than being refused in them.
    const control = fc.integer({ min: 0x00, max: 0x7f })
      .filter((c) => (c < 0x20 || c === 0x7f) && c !== 0x09 && c !== 0x0a && c !== 0x0d)
      .map((c) => String.fromCharCode(c))
    const printable = fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 20
    })
    const name = fc.oneof(
      fc.constantFrom("Idempotency-Key", "Authorization", "Content-Type", "X-Request-Id"),
      fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/)
    )
    await fc.assert(
      fc.asyncProperty(name, printable, control, printable, async (header, before, c, after) => {
        const request = `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n${header}: ${before}${c}${after}\r\n\r\n`
        const { received, ending } = await exchange(port, request)
        const answers = parseAnswers(received)
        expect(answers).toHaveLength(1)
        expectInvalidRequest(answers[0], `header.${header.toLowerCase()}`)
        expect(ending).toBe("fin")
      }),
      { numRuns: 60 }
    )
  })

  it("reads and drops the rest of a refused request, so its answer arrives whole, not cut off by a reset", async () => {
    const body = "x".repeat(4 * 1024 * 1024)
    const request = `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nIdempotency-Key: a\x01b\r\n\r\n${body}`
    const { received, ending } = await exchange(port, request)
    expectInvalidRequest(parseAnswers(received)[0], "header.idempotency-key")
    expect(ending).toBe("fin")
  })

  it("answers a well-formed request sent before the refused one on the same connection first", async () => {
    const list = `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n\r\n`
    const { received, ending } = await exchange(port, list + createPet("Idempotency-Key: a\x01b"))
    const answers = parseAnswers(received)
    expect(answers.map((answer) => answer.status)).toEqual([200, 400])
    expect(Array.isArray(JSON.parse(answers[0]!.body))).toBe(true)
    expectInvalidRequest(answers[1], "header.idempotency-key")
    expect(ending).toBe("fin")
  })

  it("gives each refused request an id of its own, even when the client sent one", async () => {
    const refused = () =>
      exchange(port, `GET /v1/pets HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: mine-1\r\nX-Note: a\x01b\r\n\r\n`)
    const ids = await Promise.all([refused(), refused()]).then((exchanges) =>
      exchanges.map(({ received }) => parseAnswers(received)[0]!.headers["x-request-id"])
    )
    expect(new Set(ids).size).toBe(2)
    expect(ids).not.toContain("mine-1")
  })

  it("keeps serving: a clean request on a new connection gets its answer", async () => {
    await exchange(port, createPet("Idempotency-Key: a\x01b"))
    const response = await fetch(`${server.baseUrl}/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    expect(response.status).toBe(200)
  })
})
