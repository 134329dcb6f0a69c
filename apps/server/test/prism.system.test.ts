/**
 * Real requests through Stoplight Prism's validation proxy (`prism proxy
 * <document> <upstream> --errors`), loaded with the committed document, in
 * front of a real server process. With `--errors`, Prism answers 500 with an
 * `sl-violations` header when an answer breaks the document (status, headers,
 * body), so every answer below must come through unchanged from the server.
 *
 * Two proxies: one validates requests too (the requests the document calls
 * valid: every operation, and the errors a valid request can meet: 400 for a
 * name of astral characters over 100 UTF-16 code units, 401 for an unknown
 * key, 404, 413, 422, 429); the other forwards requests the document calls
 * invalid (Prism would answer those itself), so that the server's 400 and 415
 * are checked against the document as well. A method the document does not
 * declare (405) and an unknown path (404) are answered by Prism from the
 * document alone, never forwarded, so they cannot be checked this way; nor can
 * malformed JSON, which Prism cannot parse to forward.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import {
  type Answer,
  eventually,
  freePort,
  send,
  type StartedProcess,
  startServerProcess
} from "@petstore/test-support"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/** The committed document, `packages/contract/openapi.json`, which a test keeps equal to what the contract generates. */
const committedDocumentPath = createRequire(import.meta.url).resolve("@petstore/contract/openapi.json")
const prismCli = join(
  dirname(createRequire(import.meta.url).resolve("@stoplight/prism-cli/package.json")),
  "dist",
  "index.js"
)

interface Prism {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
}

const startPrism = async (upstream: string, validateRequests: boolean): Promise<Prism> => {
  const port = await freePort()
  const child = spawn(process.execPath, [
    prismCli,
    "proxy",
    committedDocumentPath,
    upstream,
    "--errors",
    `--validate-request=${validateRequests}`,
    "-p",
    String(port),
    "-h",
    "127.0.0.1"
  ], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const listening = await eventually(
    () => output.includes("Prism is listening") || child.exitCode !== null,
    60_000,
    100
  )
  if (!listening || child.exitCode !== null) throw new Error(`Prism did not start:\n${output}`)
  return { url: `http://127.0.0.1:${port}`, child, output: () => output }
}

const stopPrism = async (prism: Prism | undefined) => {
  if (prism === undefined || prism.child.exitCode !== null) return
  const exited = once(prism.child, "exit")
  prism.child.kill("SIGTERM")
  await exited
}

/** The answer is the server's, unchanged: Prism found nothing in it that breaks the document. */
const expectConforming = (answer: Answer, status: number, where: string) => {
  const context = `${where}: ${answer.status} ${answer.headers.get("sl-violations") ?? ""} ${answer.text.slice(0, 500)}`
  expect(answer.headers.get("sl-violations"), context).toBeNull()
  expect(answer.headers.get("content-type") ?? "", context).not.toMatch(/problem\+json/)
  expect(answer.status, context).toBe(status)
  if (status >= 400) expect(answer.body, context).toMatchObject({ status, code: expect.any(String) })
}

describe("the document, checked by Prism's validation proxy against a real server process", () => {
  let server: StartedProcess
  let strict: Prism
  let lenient: Prism
  let key: string

  beforeAll(async () => {
    server = await startServerProcess({ DATA_DIR: ":memory:" })
    ;[strict, lenient] = await Promise.all([
      startPrism(`${server.origin}/v1`, true),
      startPrism(`${server.origin}/v1`, false)
    ])
    key = await server.createKey("enterprise", { perMinute: 100_000, perDay: 1_000_000 })
  }, 120_000)
  afterAll(async () => {
    await Promise.all([stopPrism(strict), stopPrism(lenient)])
    await server?.server.stop()
  })

  const json = (body: unknown, headers: Record<string, string> = {}) => ({
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  const authorized = () => ({ headers: { authorization: `Bearer ${key}` } })

  it("every operation, valid requests: createPet 201 (and its replay), getPet 200, listPets 200 on two pages, getRateLimit 200", async () => {
    const created = await send(
      `${strict.url}/pets`,
      json({ name: "Rex", categoryId: 1 }, { "idempotency-key": "prism-1" })
    )
    expectConforming(created, 201, "createPet")
    const replay = await send(
      `${strict.url}/pets`,
      json({ name: "Rex", categoryId: 1 }, { "idempotency-key": "prism-1" })
    )
    expectConforming(replay, 201, "createPet replayed")
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    await send(`${strict.url}/pets`, json({ name: "  Fido  ", categoryId: 2, status: "pending" }))
    await send(`${strict.url}/pets`, json({ name: "Bella", categoryId: 2 }))

    expectConforming(
      await send(`${strict.url}/pets/${(created.body as { id: number }).id}`, authorized()),
      200,
      "getPet"
    )

    const first = await send(`${strict.url}/pets?limit=1&status=available`, authorized())
    expectConforming(first, 200, "listPets")
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get("link") ?? "")
    expect(next).not.toBeNull()
    const cursor = new URL(next![1]!).searchParams.get("cursor")!
    expectConforming(
      await send(`${strict.url}/pets?limit=1&cursor=${cursor}`, authorized()),
      200,
      "listPets, next page"
    )
    expectConforming(await send(`${strict.url}/pets`, authorized()), 200, "listPets, defaults")

    expectConforming(await send(`${strict.url}/rate_limit`, authorized()), 200, "getRateLimit")
  })

  it("the errors a request valid by the document can meet: 400, 401, 404, 413, 422", async () => {
    // Valid by the pattern (60 code points), over the limit in UTF-16 code units, as the description says.
    expectConforming(
      await send(`${strict.url}/pets`, json({ name: "😀".repeat(60), categoryId: 1 })),
      400,
      "createPet, long astral name"
    )
    const unknownKey = await send(`${strict.url}/pets`, { headers: { authorization: "Bearer psk_unknown" } })
    expectConforming(unknownKey, 401, "listPets, unknown key")
    expect(unknownKey.headers.get("www-authenticate")).toBe("Bearer realm=\"petstore\", error=\"invalid_token\"")
    expectConforming(await send(`${strict.url}/pets/9007199254740991`, authorized()), 404, "getPet, unknown id")
    expectConforming(
      await send(`${strict.url}/pets`, json({ name: `${" ".repeat(17 * 1024)}Rex`, categoryId: 1 })),
      413,
      "createPet, 17 KiB body"
    )
    await send(`${strict.url}/pets`, json({ name: "Rex", categoryId: 1 }, { "idempotency-key": "prism-2" }))
    expectConforming(
      await send(`${strict.url}/pets`, json({ name: "Max", categoryId: 1 }, { "idempotency-key": "prism-2" })),
      422,
      "createPet, Idempotency-Key reused"
    )
  })

  it("429 with Retry-After once a key's quota is spent, on every operation", async () => {
    const limited = await server.createKey("enterprise", { perMinute: 1, perDay: 1_000 })
    const headers = { authorization: `Bearer ${limited}` }
    expectConforming(await send(`${strict.url}/pets`, { headers }), 200, "listPets, the one request allowed")
    for (
      const [path, init] of [
        ["/pets", { headers }],
        ["/pets/1", { headers }],
        ["/pets", {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: "{\"name\":\"Rex\",\"categoryId\":1}"
        }]
      ] as const
    ) {
      const answer = await send(`${strict.url}${path}`, init)
      expectConforming(answer, 429, `${init.method ?? "GET"} ${path} over quota`)
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    }
  })

  it("the server's answers to requests the document calls invalid: 400 naming the field, 415", async () => {
    for (
      const [where, path, init] of [
        ["listPets, limit=0", "/pets?limit=0", authorized()],
        ["listPets, limit=1e1", "/pets?limit=1e1", authorized()],
        ["listPets, unknown status", "/pets?status=adopted", authorized()],
        ["listPets, malformed cursor", "/pets?cursor=nope", authorized()],
        ["getPet, petId=abc", "/pets/abc", authorized()],
        ["getPet, petId=01", "/pets/01", authorized()],
        ["createPet, categoryId 0 and an empty name", "/pets", json({ name: " ", categoryId: 0 })],
        ["createPet, unknown field", "/pets", json({ name: "Rex", categoryId: 1, categoryID: 1 })]
        // Not malformed JSON: Prism cannot parse such a body to forward it, and never answers.
      ] as const
    ) {
      const answer = await send(`${lenient.url}${path}`, init)
      expectConforming(answer, 400, where)
      expect((answer.body as { details: Array<unknown> }).details.length, where).toBeGreaterThan(0)
    }
    expectConforming(
      await send(`${lenient.url}/pets`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "text/plain" },
        body: "Rex"
      }),
      415,
      "createPet, text/plain"
    )
  })
})
