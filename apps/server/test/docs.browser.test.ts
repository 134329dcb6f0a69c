/**
 * The API reference page at /docs in a real browser: what a newcomer does with
 * a fresh key, click by click, against the real server.
 */
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumAvailable, launchChromium } from "@petstore/test-support/browser"
import { type RunningServer, startServer } from "./support/testServer.ts"

describe.skipIf(!chromiumAvailable)("the API reference page at /docs, in Chromium", () => {
  let server: RunningServer
  let browser: Browser
  const origin = () => new URL(server.baseUrl).origin

  beforeAll(async () => {
    server = await startServer("pglite")
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** The docs page in a fresh browser context, with a new key pasted as the bearer token. */
  const docsWithNewKey = async () => {
    const { key } = await server.createKey("free")
    const context = await browser.newContext()
    // The page must work on its own: whatever it would fetch from elsewhere (fonts) is refused.
    await context.route((url) => url.origin !== origin(), (route) => route.abort())
    const page = await context.newPage()
    // A missing control should fail the test with its name well before the test's own timeout.
    page.setDefaultTimeout(15_000)
    await page.goto(`${origin()}/docs`)
    await page.getByRole("button", { name: "Select Auth Type" }).click()
    await page.getByRole("option", { name: "apiKey" }).click()
    await page.getByRole("textbox", { name: "Bearer Token" }).fill(key)
    return { key, context, page }
  }

  it("takes a pasted API key as a bearer token: listPets' code sample carries it and \"try it\" gets a 200", async () => {
    const { key, context, page } = await docsWithNewKey()

    await page.getByRole("button", { name: /^List pets/ }).click()
    const listPets = page.getByRole("region", { name: "List pets", exact: true })
    const sample = await listPets.getByRole("group", { name: /^Request Example/ }).locator("code").innerText()
    expect(sample).toContain(`--header 'Authorization: Bearer ${key}'`)
    // Every parameter the sample sends has a value the server accepts: none is sent empty.
    expect(sample).not.toMatch(/[?&][a-z]+=(?:&|'|$)/m)

    // The document's paths are relative to its server, which ends in /v1.
    await listPets.getByRole("button", { name: "Test Request (get /pets)" }).click()
    const [answer] = await Promise.all([
      page.waitForResponse((response) =>
        new URL(response.url()).pathname === "/v1/pets" && response.request().method() === "GET"
      ),
      page.getByRole("button", { name: /^Send get request to / }).click()
    ])
    expect(answer.request().headers()["authorization"]).toBe(`Bearer ${key}`)
    expect([...new URL(answer.url()).searchParams].filter(([, value]) => value === "")).toEqual([])
    expect(answer.status()).toBe(200)
    await page.getByRole("dialog").getByText("200 OK").waitFor()
    await context.close()
  })

  it("sends createPet's example as it stands and gets 201: the example body and headers are a request the server accepts", async () => {
    const { context, page } = await docsWithNewKey()

    await page.getByRole("button", { name: /^Add a pet/ }).click()
    const createPet = page.getByRole("region", { name: "Add a pet", exact: true })
    const sample = await createPet.getByRole("group", { name: /^Request Example/ }).locator("code").innerText()
    // No header is sent empty, and the body is the schema's examples: a name and a category the server accepts.
    expect(sample).not.toMatch(/--header '[^:']+:\s*'/)
    expect(sample).toContain("\"name\": \"Rex\"")
    expect(sample).toContain("\"categoryId\": 1")

    await createPet.getByRole("button", { name: "Test Request (post /pets)" }).click()
    const [answer] = await Promise.all([
      page.waitForResponse((response) =>
        new URL(response.url()).pathname === "/v1/pets" && response.request().method() === "POST"
      ),
      page.getByRole("button", { name: /^Send post request to / }).click()
    ])
    const sent = answer.request()
    expect(Object.entries(sent.headers()).filter(([, value]) => value.trim() === "")).toEqual([])
    expect(JSON.parse(sent.postData() ?? "null")).toMatchObject({ name: "Rex", categoryId: 1 })
    expect(answer.status()).toBe(201)
    expect(await answer.json()).toMatchObject({
      id: expect.any(Number),
      name: "Rex",
      categoryId: 1,
      status: "available"
    })
    await page.getByRole("dialog").getByText("201 Created").waitFor()
    await context.close()
  })
})
