import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"

/** The system's Chromium (Debian's `chromium` package); Playwright's own browser download is never used. */
export const CHROMIUM_PATH = "/usr/bin/chromium"

/**
 * Whether browser tests can run here. Without Chromium they are skipped with
 * one line, except in CI, where a missing browser must fail the run rather
 * than let the browser tests pass by not running.
 */
export const chromiumAvailable = (() => {
  if (existsSync(CHROMIUM_PATH)) return true
  if (process.env.CI === "true") {
    throw new Error(`CI=true but there is no Chromium at ${CHROMIUM_PATH}: install Debian's chromium package`)
  }
  console.warn(`No Chromium at ${CHROMIUM_PATH}: skipping the browser tests (apt-get install chromium to run them)`)
  return false
})()

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
  })
