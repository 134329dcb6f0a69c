import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { describe, expect, it, onTestFinished } from "vitest"
import { runSuite } from "../src/index.ts"
import type { Deviation } from "./fixture/deviations.ts"
import { type FixtureOptions, startFixture } from "./fixture/server.ts"
import { failures, idsWith } from "./support/keys.ts"

const FUZZ_CHECKS = [
  "fuzz.valid",
  "fuzz.invalid",
  "fuzz.invalid-contract",
  "fuzz.methods",
  "fuzz.methods-contract",
  "fuzz.no-5xx"
]

const fixture = async (options: FixtureOptions = {}) => {
  const started = await startFixture({ recoverySeconds: 1, ...options })
  onTestFinished(() => started.close())
  return started
}

/** The fuzz phase alone, with the fixture's first pro key, recording each request's method and path. */
const fuzzRun = async (options: { seed: number; fuzz?: number; deviation?: Deviation }) => {
  const requests: Array<string> = []
  const started = await fixture({
    deviation: options.deviation,
    onRequest: (request) => requests.push(`${request.method} ${request.url}`)
  })
  const result = await runSuite({
    baseUrl: started.baseUrl,
    keys: { pro: [started.keys.pro[0]!] },
    grep: "fuzz.",
    seed: options.seed,
    ...(options.fuzz === undefined ? {} : { fuzz: options.fuzz })
  })
  return { result, requests, key: started.keys.pro[0]! }
}

describe("the schema-driven phase", () => {
  it("passes a conforming server, and reports its seed and the requests it sent", async () => {
    const { result } = await fuzzRun({ seed: 20261122, fuzz: 200 })
    expect(failures(result)).toEqual([])
    expect(idsWith(result, "pass")).toEqual(FUZZ_CHECKS)
    expect(result.fuzz?.seed).toBe(20261122)
    // 200 generated requests and a probe for each method a path of the API lacks.
    expect(result.fuzz?.sent).toBeGreaterThan(200)
  })

  it("sends the same requests again for the same seed, and others for another seed", async () => {
    const first = await fuzzRun({ seed: 7 })
    const again = await fuzzRun({ seed: 7 })
    const other = await fuzzRun({ seed: 8 })
    expect(again.requests).toEqual(first.requests)
    expect(other.requests).not.toEqual(first.requests)
  })

  it("prints a failure as a curl command that reproduces it, with the key read from $CONFORMANCE_KEY", async () => {
    const { result, key } = await fuzzRun({ seed: 1, deviation: "put-answered-200" })
    const methods = result.results.find((check) => check.id === "fuzz.methods")
    expect(methods?.status).toBe("fail")
    const curl = methods!.failure!.request!
    expect(curl).toMatch(
      /^curl .*-X PUT '[^']+\/v1\/pets\/\d+' -H "Authorization: Bearer \$CONFORMANCE_KEY" -H 'accept: application\/json'$/
    )
    expect(JSON.stringify(result)).not.toContain(key)
    expect(methods!.failure!.expected).toContain("--seed 1")

    // The fixture is still up until the test ends: the command, as printed, gets the same answer again.
    const { stdout } = await promisify(execFile)("bash", ["-c", curl], {
      env: { PATH: process.env.PATH ?? "", CONFORMANCE_KEY: key }
    })
    expect(stdout).toMatch(/^HTTP\/1\.1 200 OK/)
  })

  it("paces its requests within the key's quota: it waits for the window's reset instead of drawing a 429", async () => {
    const started = await fixture({ minuteSeconds: 2 })
    const key = started.keys.free[0]!
    const result = await runSuite({
      baseUrl: started.baseUrl,
      keys: { free: [key] },
      grep: "fuzz.",
      fuzz: 100,
      seed: 3
    })
    expect(failures(result)).toEqual([])
    // More requests than the 60 a window admits, spread over windows, none refused.
    expect(result.fuzz?.sent).toBeGreaterThan(60)
    expect(started.windowsOpened(key)).toBeGreaterThan(1)
    expect(started.refusals(key)).toBe(0)
  })

  it("is off with fuzz: 0", async () => {
    const started = await fixture()
    const result = await runSuite({
      baseUrl: started.baseUrl,
      keys: { pro: [started.keys.pro[0]!] },
      grep: "fuzz.",
      fuzz: 0
    })
    expect(idsWith(result, "skip")).toEqual(FUZZ_CHECKS)
    expect(result.fuzz).toBeUndefined()
  })
})
