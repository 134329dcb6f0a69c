import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { findToolBinaries, missingTool, optionalToolMissing } from "../src/tools.ts"

let dir: string

const executable = (path: string) => {
  writeFileSync(path, "#!/bin/sh\n")
  chmodSync(path, 0o755)
  return path
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tools-test-"))
})
afterEach(() => {
  vi.unstubAllEnvs()
  vi.restoreAllMocks()
  rmSync(dir, { recursive: true, force: true })
})

describe("findToolBinaries", () => {
  it("finds the tool on PATH, then in the variable, each binary once, and only paths that exist", () => {
    mkdirSync(join(dir, "bin"))
    const onPath = executable(join(dir, "bin", "sometool"))
    const listed = executable(join(dir, "sometool-listed"))
    // The same binary under a second name (a symlink) is one binary, not two.
    symlinkSync(listed, join(dir, "sometool-alias"))
    vi.stubEnv("PATH", `${join(dir, "missing")}:${join(dir, "bin")}`)
    vi.stubEnv("SOMETOOL_BINS", `${listed}:${join(dir, "nothing-here")}:${join(dir, "sometool-alias")}:${onPath}`)
    const found = findToolBinaries({ command: "sometool", envVar: "SOMETOOL_BINS" })
    expect(found).toEqual([onPath, listed])
  })

  it("finds nothing when the tool is nowhere", () => {
    vi.stubEnv("PATH", dir)
    vi.stubEnv("SOMETOOL_BINS", "")
    expect(findToolBinaries({ command: "sometool", envVar: "SOMETOOL_BINS" })).toEqual([])
  })
})

describe("missingTool", () => {
  it("skips with one line on a user's machine", () => {
    vi.stubEnv("CI", "")
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {})
    expect(missingTool("sometool is not installed")).toEqual({ skip: true })
    expect(warn.mock.calls).toEqual([["skipped: sometool is not installed"]])
  })

  it("fails under CI=true, where .ci/run installs the tool", () => {
    vi.stubEnv("CI", "true")
    expect(() => missingTool("sometool is not installed")).toThrow("CI=true and sometool is not installed")
  })
})

describe("optionalToolMissing", () => {
  it("skips with one line under CI=true too: no registry CI reaches serves such a tool", () => {
    vi.stubEnv("CI", "true")
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {})
    expect(optionalToolMissing("k6 is not installed")).toEqual({ skip: true })
    expect(warn.mock.calls).toEqual([["skipped: k6 is not installed"]])
  })
})
