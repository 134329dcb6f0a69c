/**
 * `GET /v1/events` read from its end (README "Events and webhooks"): every page links on, an empty page at
 * the end of the log links to itself, and following that link returns only newer events.
 */
import { type Answer, bearer, json, send } from "@petstore/test-support"
import { afterAll, beforeAll, expect, it } from "vitest"
import { describeOnEachBackend } from "./support/databases.ts"
import { transactionsOpenNow } from "./support/heldBack.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

const nextOf = (answer: Answer) => /^<([^>]+)>; rel="next"$/.exec(answer.headers.get("link") ?? "")?.[1]

describeOnEachBackend("the events feed from its end", ({ name }) => {
  let server: RunningServer
  let key: string
  const createPet = (petName: string) =>
    send(`${server.baseUrl}/pets`, {
      method: "POST",
      headers: json(key),
      body: JSON.stringify({ name: petName, categoryId: 1 })
    })
  const read = (url: string) => send(url, { headers: bearer(key) })

  /**
   * Follows the link until a page shows events: events are listed once every older transaction has ended, and
   * on a shared PostgreSQL another database's transaction may stay open for minutes (`heldBack.ts`). The polls
   * are bounded once no transaction older than the events is open; before that, only the test's hang guard.
   */
  const followUntilEvents = async (url: string) => {
    const older = await transactionsOpenNow(name)
    try {
      for (let attempt = 0; attempt < 300;) {
        const page = await read(url)
        expect(page.status, page.text).toBe(200)
        if (page.body.length > 0) return page
        expect(nextOf(page), "an empty page links to itself").toBe(url)
        if (!(await older.stillOpen())) attempt++
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    } finally {
      await older.end()
    }
    throw new Error(`no events at ${url}, with no older transaction open`)
  }

  beforeAll(async () => {
    server = await startServer(name)
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it("an empty log answers [] with a link to the same query, which later shows the first event", async () => {
    const first = await read(`${server.baseUrl}/events?limit=5`)
    expect(first.status).toBe(200)
    expect(first.body).toEqual([])
    const next = nextOf(first)!
    expect(new URL(next).pathname).toBe("/v1/events")
    expect(Object.fromEntries(new URL(next).searchParams)).toEqual({ limit: "5" })
    const pet = (await createPet("First")).body
    const page = await followUntilEvents(next)
    expect(page.body.map((event: { type: string; data: { id: number } }) => [event.type, event.data.id])).toEqual([
      ["pet.created", pet.id]
    ])
    expect(new URL(nextOf(page)!).searchParams.get("cursor")).toMatch(/^[A-Za-z0-9_-]+$/)
  })

  it("every page that returned events links on; the end links to itself; following it gives only newer events", async () => {
    for (let i = 0; i < 3; i++) await createPet(`Walk ${i}`)
    // Walk from the start, two at a time, to the end of the log.
    const seen: Array<string> = []
    let url = `${server.baseUrl}/events?limit=2&type=pet.created`
    let end: string | undefined
    for (let pages = 0; pages < 50 && end === undefined; pages++) {
      const page = await read(url)
      expect(page.status, page.text).toBe(200)
      const next = nextOf(page)
      expect(next, `page ${pages} has a next link`).toBeDefined()
      expect(new URL(next!).searchParams.get("type")).toBe("pet.created")
      if (page.body.length === 0) {
        expect(next).toBe(url)
        end = url
      } else {
        seen.push(...page.body.map((event: { id: string }) => event.id))
        url = next!
      }
    }
    expect(end).toBeDefined()
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.length).toBeGreaterThanOrEqual(4)

    const newer = (await createPet("Newer")).body
    const page = await followUntilEvents(end!)
    expect(page.body).toHaveLength(1)
    expect(page.body[0].data.id).toBe(newer.id)
    expect(seen).not.toContain(page.body[0].id)
    // And from there, the end again.
    const after = await read(nextOf(page)!)
    expect(after.body).toEqual([])
    expect(nextOf(after)).toBe(nextOf(page))
  })
})
