import type { CheckResult, Summary, SuiteResult } from "./model.ts"

export interface Style {
  readonly pass: (text: string) => string
  readonly fail: (text: string) => string
  readonly skip: (text: string) => string
}

export const plainStyle: Style = { pass: (text) => text, fail: (text) => text, skip: (text) => text }

export const colourStyle: Style = {
  pass: (text) => `\u001b[32m${text}\u001b[39m`,
  fail: (text) => `\u001b[31m${text}\u001b[39m`,
  skip: (text) => `\u001b[33m${text}\u001b[39m`
}

/** One line per check; a failure adds the request, what was expected and what came back. */
export const formatResult = (result: CheckResult, style: Style = plainStyle) => {
  const head = `${result.tag.padEnd(9)} ${result.title} [${result.id}]`
  switch (result.status) {
    case "pass":
      return `${style.pass("PASS")}  ${head}`
    case "skip":
      return `${style.skip("SKIP")}  ${head}: ${result.reason}`
    case "fail":
      return [
        `${style.fail("FAIL")}  ${head}`,
        ...(result.failure?.request === undefined ? [] : [`        request:  ${result.failure.request}`]),
        `        expected: ${result.failure?.expected}`,
        `        received: ${result.failure?.received}`
      ].join("\n")
  }
}

export const formatSummary = (
  { passed, failed, skipped }: Summary,
  incomplete?: SuiteResult["incomplete"]
) =>
  `${passed} passed, ${failed} failed, ${skipped} skipped` +
  (incomplete === undefined ? "" : `; incomplete: ${incomplete.notRun} not run (${incomplete.reason})`)

const xml = (text: string) =>
  text
    // Characters XML 1.0 cannot carry at all.
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD]/gu, "\uFFFD")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")

const seconds = (millis: number) => (millis / 1000).toFixed(3)

/** JUnit XML, one test suite per area (pets, auth, free, …), as CI systems read it. */
export const toJUnit = (suite: SuiteResult) => {
  const areas = [...new Set(suite.results.map((result) => result.area))]
  const testsuites = areas.map((area) => {
    const results = suite.results.filter((result) => result.area === area)
    const count = (status: CheckResult["status"]) => results.filter((result) => result.status === status).length
    const cases = results.map((result) => {
      const open = `    <testcase classname="conformance.${xml(area)}" name="${
        xml(`[${result.tag}] ${result.title}`)
      }" time="${seconds(result.durationMs)}"`
      if (result.status === "pass") return `${open}/>`
      const body = result.status === "skip"
        ? `      <skipped message="${xml(result.reason ?? "")}"/>`
        : `      <failure message="${xml(`expected ${result.failure?.expected}`)}" type="${result.tag}">${
          xml([
            ...(result.failure?.request === undefined ? [] : [`request:  ${result.failure.request}`]),
            `expected: ${result.failure?.expected}`,
            `received: ${result.failure?.received}`
          ].join("\n"))
        }</failure>`
      return `${open}>\n${body}\n    </testcase>`
    })
    const time = results.reduce((total, result) => total + result.durationMs, 0)
    return [
      `  <testsuite name="${xml(area)}" tests="${results.length}" failures="${count("fail")}" errors="0" skipped="${
        count("skip")
      }" time="${seconds(time)}" timestamp="${suite.startedAt}">`,
      ...cases,
      "  </testsuite>"
    ].join("\n")
  })
  // An incomplete run shows as an error of its own, so that no CI reads the checks that did run as the whole story.
  if (suite.incomplete !== undefined) {
    const message =
      `the run ended before every check ran: ${suite.incomplete.reason}; ${suite.incomplete.notRun} not run`
    testsuites.push([
      `  <testsuite name="run" tests="1" failures="0" errors="1" skipped="0" time="${
        seconds(suite.durationMs)
      }" timestamp="${suite.startedAt}">`,
      `    <testcase classname="conformance.run" name="the run is complete" time="${seconds(suite.durationMs)}">`,
      `      <error message="${xml(message)}" type="incomplete"/>`,
      "    </testcase>",
      "  </testsuite>"
    ].join("\n"))
  }
  const { passed, failed, skipped } = suite.summary
  const errors = suite.incomplete === undefined ? 0 : 1
  return [
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
    `<testsuites name="${xml(`petstore conformance of ${suite.baseUrl}`)}" tests="${
      passed + failed + skipped + errors
    }" failures="${failed}" errors="${errors}" skipped="${skipped}" time="${seconds(suite.durationMs)}">`,
    ...testsuites,
    "</testsuites>",
    ""
  ].join("\n")
}

/** The whole result as JSON: the run, the summary and every check. */
export const toJson = (suite: SuiteResult) => `${JSON.stringify(suite, null, 2)}\n`
