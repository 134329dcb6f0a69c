/**
 * The API reference page at /docs in a real browser: what a newcomer does with
 * a fresh key, click by click, against the real server.
 */
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromiumAvailable, launchChromium } from "@petstore/test-support/browser"
import { type RunningServer, startServer } from "./support/testServer.ts"

/** The scheme the Authentication box has selected, as Scalar announces it to screen readers. */
const expectSelectedAuth = async (page: Page, scheme: string) => {
  const selected = page.getByText("Selected Auth Type:", { exact: true }).first().locator("..")
  expect((await selected.innerText()).replace("Selected Auth Type:", "").trim()).toBe(scheme)
}

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

  /** The docs page in a fresh browser context, with every request it makes logged. */
  const openDocs = async () => {
    const context = await browser.newContext()
    const requested: Array<string> = []
    context.on("request", (request) => requested.push(request.url()))
    // Whatever it would fetch from elsewhere is refused too, as on a deployment without Internet access.
    await context.route((url) => url.origin !== origin(), (route) => route.abort())
    const page = await context.newPage()
    // A missing control should fail the test with its name well before the test's own timeout.
    page.setDefaultTimeout(15_000)
    await page.goto(`${origin()}/docs`)
    return { context, page, requested }
  }

  /**
   * The docs page with a new key pasted as the bearer token: the bearer scheme is already selected, so the
   * token's box is there at once, as a reader finds it.
   */
  const docsWithNewKey = async () => {
    const { key } = await server.createKey("free")
    const { context, page, requested } = await openDocs()
    await page.getByRole("textbox", { name: "Bearer Token" }).fill(key)
    return { key, context, page, requested }
  }

  it("loads nothing from another host, fonts included, and names the bearer scheme, preselected", async () => {
    const { context, page, requested } = await openDocs()
    await page.getByRole("textbox", { name: "Bearer Token" }).waitFor()
    await expectSelectedAuth(page, "bearerAuth")
    // Let the page settle, so that late requests (fonts, icons) are in the log.
    await page.waitForLoadState("networkidle")
    expect(requested.length).toBeGreaterThan(0)
    expect(requested.filter((url) => new URL(url).origin !== origin())).toEqual([])
    await context.close()
  })

  it("has one section for webhooks, with plain-text summaries", async () => {
    const { context, page } = await openDocs()
    const sidebar = page.locator("aside").first()
    // Each group of the sidebar is a line after its toggle's "Open Group" / "Close Group".
    const lines = (await sidebar.innerText()).split("\n").map((line) => line.trim())
    const groups = lines.filter((_, i) => /^(Open|Close) Group$/.test(lines[i - 1] ?? ""))
    expect(groups.filter((group) => group.toLowerCase() === "webhooks")).toEqual(["webhooks"])
    await page.getByRole("button", { name: "Open Group webhooks" }).first().click()
    const entries = await sidebar.innerText()
    expect(entries).toContain("The pet.created event, delivered")
    expect(entries).not.toContain("`")
    await context.close()
  })

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
    // No header is sent empty (curl leaves out a header printed without a value: Idempotency-Key's, below),
    // and the body is the schema's examples: a name and a category the server accepts.
    expect(sample.match(/--header '[^:']+:\s*'/g)).toEqual(["--header 'Idempotency-Key: '"])
    expect(sample).toContain("\"name\": \"Rex\"")
    expect(sample).toContain("\"categoryId\": 1")
    // No fixed Idempotency-Key: a reader who runs the sample twice gets two pets, not a replay (or a 422).
    // The page prints every header parameter; one without a value is one curl does not send.
    expect(sample).not.toMatch(/Idempotency-Key: *[^ ']/i)
    // The answer's example looks like a pet, not `"name": ""`.
    const region = await createPet.innerText()
    expect(region).not.toContain("\"name\": \"\"")
    expect(region.match(/"name": "Rex"/g)?.length, "the request's and the answer's examples").toBeGreaterThanOrEqual(2)

    await createPet.getByRole("button", { name: "Test Request (post /pets)" }).click()
    const [answer] = await Promise.all([
      page.waitForResponse((response) =>
        new URL(response.url()).pathname === "/v1/pets" && response.request().method() === "POST"
      ),
      page.getByRole("button", { name: /^Send post request to / }).click()
    ])
    const sent = answer.request()
    expect(Object.entries(sent.headers()).filter(([, value]) => value.trim() === "")).toEqual([])
    expect(sent.headers()["idempotency-key"]).toBeUndefined()
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

  it("placeOrder's code sample carries no fixed Idempotency-Key either", async () => {
    const { context, page } = await openDocs()
    await page.getByRole("button", { name: "Open Group store" }).click()
    await page.getByRole("button", { name: /^Order a pet/ }).click()
    const placeOrder = page.getByRole("region", { name: "Order a pet", exact: true })
    const sample = await placeOrder.getByRole("group", { name: /^Request Example/ }).locator("code").innerText()
    expect(sample).toContain("/store/orders")
    expect(sample).not.toMatch(/Idempotency-Key: *[^ ']/i)
    await context.close()
  })
})
