/**
 * The cursors of `GET /v1/events` are exactly those the OpenAPI document's pattern describes, so that
 * schema-driven tools make only valid ones; the base64url cursors of earlier versions, which a receiver
 * may have kept to read on later, still continue where they left off.
 */
import { EVENT_CURSOR_PATTERN } from "@petstore/contract"
import { send } from "@petstore/test-support"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/testServer.ts"

describe("GET /v1/events cursors", () => {
  let server: RunningServer
  let key: string
  const authorized = () => ({ authorization: `Bearer ${key}` })
  const cursorOf = (link: string | null) => new URL(/^<([^>]+)>/.exec(link ?? "")![1]!).searchParams.get("cursor")!

  beforeAll(async () => {
    server = await startServer("pglite")
    key = (await server.createKey("business")).key
    for (const name of ["Rex", "Fido", "Tom"]) {
      await send(`${server.baseUrl}/pets`, {
        method: "POST",
        headers: { ...authorized(), "content-type": "application/json" },
        body: JSON.stringify({ name, categoryId: 1 })
      })
    }
  })
  afterAll(() => server?.stop())

  it("issues cursors the document's pattern admits, and following one continues after the page", async () => {
    const first = await send(`${server.baseUrl}/events?limit=1`, { headers: authorized() })
    expect(first.status).toBe(200)
    const cursor = cursorOf(first.headers.get("link"))
    expect(cursor).toMatch(EVENT_CURSOR_PATTERN)
    const second = await send(`${server.baseUrl}/events?limit=1&cursor=${cursor}`, { headers: authorized() })
    expect(second.status).toBe(200)
    expect(second.body).toHaveLength(1)
    expect(second.body[0].id).not.toBe(first.body[0].id)
    expect(cursorOf(second.headers.get("link"))).toMatch(EVENT_CURSOR_PATTERN)
  })

  it("still reads a cursor of an earlier version (base64url of the same position)", async () => {
    const first = await send(`${server.baseUrl}/events?limit=1`, { headers: authorized() })
    const position = Buffer.from(cursorOf(first.headers.get("link")), "hex").toString("latin1")
    const earlier = Buffer.from(position).toString("base64url")
    const [now, then] = await Promise.all([
      send(`${server.baseUrl}/events?limit=1&cursor=${cursorOf(first.headers.get("link"))}`, { headers: authorized() }),
      send(`${server.baseUrl}/events?limit=1&cursor=${earlier}`, { headers: authorized() })
    ])
    expect(then.status).toBe(200)
    expect(then.body).toEqual(now.body)
  })

  it.each(["abc", "6576656E74733A3734312E3132", "6576656e74733a302e31", "6576656e74733a3734312e30"])(
    "refuses the cursor %s, which it never issued, with 400",
    async (cursor) => {
      const answer = await send(`${server.baseUrl}/events?cursor=${cursor}`, { headers: authorized() })
      expect(answer.status).toBe(400)
      expect(answer.body.details).toEqual([{ path: "query.cursor", message: expect.any(String) }])
    }
  )
})
