import { execFileSync } from "node:child_process"
import { findToolBinaries, optionalToolMissing } from "@petstore/test-support"

/** Whether a binary is Schemathesis 3 (an `st` on PATH may be another program). */
const isSchemathesis = (path: string) => {
  try {
    return /^st, version 3\./m.test(execFileSync(path, ["--version"], { encoding: "utf8", timeout: 30_000 }))
  } catch {
    return false
  }
}

/**
 * Schemathesis' `st`, on PATH or in `SCHEMATHESIS_BIN`. No registry these machines reach serves it, so when it
 * is missing the suite is skipped with one line, under CI=true too.
 */
export const schemathesis: { readonly bin: string } | { readonly skip: true } = (() => {
  const bin = findToolBinaries({ command: "st", envVar: "SCHEMATHESIS_BIN" }).find(isSchemathesis)
  return bin !== undefined
    ? { bin }
    : optionalToolMissing(
      "Schemathesis 3 is not installed, so the OpenAPI document was not fuzzed by it: " +
        "`pip install schemathesis==3.39.16` puts `st` on PATH, or point SCHEMATHESIS_BIN at it"
    )
})()
