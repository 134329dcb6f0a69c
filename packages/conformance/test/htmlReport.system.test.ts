import { chromiumAvailable, launchChromium } from "@petstore/test-support/browser"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it, onTestFinished } from "vitest"
import { runSuite, toHtml } from "../src/index.ts"
import { startFixture } from "./fixture/server.ts"

const reports = mkdtempSync(join(tmpdir(), "conformance-html-"))
afterAll(() => rmSync(reports, { recursive: true, force: true }))

describe.runIf(chromiumAvailable)("the HTML report, opened in Chromium", () => {
  it("shows the verdict, the summary and each failure with its curl command, loading nothing from elsewhere", async () => {
    const fixture = await startFixture({ recoverySeconds: 1, deviation: "put-answered-200" })
    onTestFinished(() => fixture.close())
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: { pro: [fixture.keys.pro[0]!] },
      grep: "fuzz.",
      seed: 5
    })
    const file = join(reports, "report.html")
    writeFileSync(file, toHtml(result))

    const browser = await launchChromium()
    onTestFinished(() => browser.close())
    const page = await browser.newPage()
    const requested: Array<string> = []
    page.on("request", (request) => requested.push(request.url()))
    await page.goto(pathToFileURL(file).href)

    expect(await page.locator("#verdict").innerText()).toBe("Does not conform: 1 failed")
    expect(await page.locator("#summary dd[data-fact=\"summary\"]").innerText()).toBe("5 passed, 1 failed, 0 skipped")
    expect(await page.locator("#summary dd[data-fact=\"fuzz\"]").innerText()).toMatch(
      /^\d+ requests in [\d.]+ s, seed 5 \(replay with --seed 5\)$/
    )
    expect(await page.locator("#summary dd[data-fact=\"base url\"]").innerText()).toBe(fixture.baseUrl)
    const failed = page.locator("#checks tr.fail")
    expect(await failed.count()).toBe(1)
    expect(await failed.getAttribute("data-id")).toBe("fuzz.methods")
    expect(await failed.locator("pre").innerText()).toMatch(
      /request: {2}curl .*-X PUT .*"Authorization: Bearer \$CONFORMANCE_KEY"/
    )
    expect(await page.locator("#checks tr.pass").count()).toBe(5)
    expect(requested).toEqual([pathToFileURL(file).href])
    expect(await page.content()).not.toContain(fixture.keys.pro[0]!)
  })
})
