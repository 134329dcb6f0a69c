import type { CheckResult, SuiteResult } from "./model.ts"
import { formatSummary } from "./report.ts"

const html = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const STATUS_LABEL = { pass: "PASS", fail: "FAIL", skip: "SKIP" } as const

const row = (result: CheckResult) => {
  const detail = result.status === "fail"
    ? `<pre>${
      html([
        ...(result.failure?.request === undefined ? [] : [`request:  ${result.failure.request}`]),
        `expected: ${result.failure?.expected}`,
        `received: ${result.failure?.received}`
      ].join("\n"))
    }</pre>`
    : result.status === "skip"
    ? `<p>${html(result.reason ?? "")}</p>`
    : ""
  return `<tr class="${result.status}" data-id="${html(result.id)}"><td class="status">${
    STATUS_LABEL[result.status]
  }</td>` +
    `<td>${html(result.tag)}</td><td><code>${html(result.id)}</code></td><td>${html(result.title)}${detail}</td></tr>`
}

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; margin: 0 0 1.5rem; }
dt { font-weight: 600; } dd { margin: 0; }
.verdict { font-size: 1.1rem; font-weight: 700; padding: .5rem .8rem; border-radius: 4px; display: inline-block; margin-bottom: 1rem; }
.verdict.fail { background: #fde2e1; color: #8a1c14; } .verdict.pass { background: #dcf3e0; color: #14602a; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid #e3e3e3; }
tr.fail td.status { color: #b3261e; font-weight: 700; } tr.pass td.status { color: #1e7b34; } tr.skip td.status { color: #8a6d00; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: .5rem; margin: .4rem 0 0; font-size: 12px; }
p { margin: .3rem 0 0; color: #555; }
@media print { tr.pass { display: none; } }
`

/**
 * The run as one self-contained HTML page (inline style, no script, no
 * external resource), readable offline and fit to attach to a ticket. Failures
 * come first; the page prints without the passing checks.
 */
export const toHtml = (suite: SuiteResult) => {
  const { failed } = suite.summary
  const ordered = [...suite.results].sort((a, b) =>
    ["fail", "skip", "pass"].indexOf(a.status) - ["fail", "skip", "pass"].indexOf(b.status)
  )
  const facts: Array<readonly [string, string]> = [
    ["Base URL", suite.baseUrl],
    ["Started", suite.startedAt],
    ["Duration", `${(suite.durationMs / 1000).toFixed(1)} s`],
    ["Run id", suite.runId],
    ["Summary", formatSummary(suite.summary, suite.incomplete)],
    ...(suite.fuzz === undefined ? [] : [
      [
        "Fuzz",
        `${suite.fuzz.sent} requests in ${
          (suite.fuzz.durationMs / 1000).toFixed(1)
        } s, seed ${suite.fuzz.seed} (replay with --seed ${suite.fuzz.seed})`
      ] as const
    ]),
    ...(suite.openapi === undefined ? [] : [
      [
        "OpenAPI document",
        `${suite.openapi.url}: ${suite.openapi.checked} responses checked, ${suite.openapi.broken} contradict it`
      ] as const
    ])
  ]
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance of ${html(suite.baseUrl)}: ${html(formatSummary(suite.summary, suite.incomplete))}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Animal Adoption Store Service: conformance report</h1>
<div id="verdict" class="verdict ${failed > 0 || suite.incomplete !== undefined ? "fail" : "pass"}">${
    [
      ...(suite.incomplete === undefined
        ? []
        : [`Incomplete: ${suite.incomplete.reason}; ${suite.incomplete.notRun} checks not run.`]),
      failed > 0
        ? `Does not conform: ${failed} failed`
        : suite.incomplete === undefined
        ? "Conforms: nothing failed"
        : "Nothing failed of what ran"
    ].map(html).join(" ")
  }</div>
<dl id="summary">
${
    facts.map(([name, value]) =>
      `<dt>${html(name)}</dt><dd data-fact="${html(name.toLowerCase())}">${html(value)}</dd>`
    ).join("\n")
  }
</dl>
<table id="checks">
<thead><tr><th>Result</th><th>Tag</th><th>Check</th><th>What it checks</th></tr></thead>
<tbody>
${ordered.map(row).join("\n")}
</tbody>
</table>
</body>
</html>
`
}
