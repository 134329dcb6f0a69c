import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { findToolBinaries, missingTool } from "@petstore/test-support"

/** Whether a binary is Schemathesis 3 (an `st` on PATH may be another program). */
const isSchemathesis = (path: string) => {
  try {
    return /^st, version 3\./m.test(execFileSync(path, ["--version"], { encoding: "utf8", timeout: 30_000 }))
  } catch {
    return false
  }
}

/**
 * Schemathesis' `st`: on PATH, in `SCHEMATHESIS_BIN`, or where
 * `../shared/tools/schemathesis/install.sh` installs it by default
 * (`~/.cache/schemathesis/bin/st`). Missing: the suite is skipped with one
 * line, and under CI=true it fails.
 */
export const schemathesis: { readonly bin: string } | { readonly skip: true } = (() => {
  const bin = findToolBinaries({
    command: "st",
    envVar: "SCHEMATHESIS_BIN",
    shared: (toolsDir, entries) =>
      entries.includes("schemathesis") && existsSync(join(toolsDir, "schemathesis", "install.sh"))
        ? [join(homedir(), ".cache", "schemathesis", "bin", "st")]
        : []
  }).find(isSchemathesis)
  return bin !== undefined
    ? { bin }
    : missingTool("Schemathesis 3 is not installed: run `bash ../shared/tools/schemathesis/install.sh` or set SCHEMATHESIS_BIN")
})()
