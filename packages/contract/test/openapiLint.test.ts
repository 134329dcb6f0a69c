/**
 * Redocly's recommended rules on the committed documents, the public API's and
 * the admin API's, with the real `@redocly/cli` (a devDependency): zero errors
 * and zero warnings.
 */
import { execFile } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import { committedAdminDocumentPath, committedDocumentPath } from "../scripts/openapi.ts"

const redoclyCli = join(dirname(createRequire(import.meta.url).resolve("@redocly/cli/package.json")), "bin", "cli.js")

interface LintReport {
  readonly totals: { readonly errors: number; readonly warnings: number }
  readonly problems: ReadonlyArray<{ readonly ruleId: string; readonly severity: string; readonly message: string }>
}

const lint = async (path: string): Promise<LintReport> => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [redoclyCli, "lint", path, "--extends=recommended", "--format=json"],
    {
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      maxBuffer: 16 * 1024 * 1024
    }
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }))
  return JSON.parse(stdout) as LintReport
}

describe.each([
  ["openapi.json", committedDocumentPath],
  ["openapi.admin.json", committedAdminDocumentPath]
])("the committed %s under Redocly's recommended rules", (_name, path) => {
  it("has no error and no warning", async () => {
    const report = await lint(path)
    expect(report.problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message}`)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
  }, 60_000)
})
