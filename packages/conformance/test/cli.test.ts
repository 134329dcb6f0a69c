import { spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { freePort } from "@petstore/test-support"
import { afterAll, describe, expect, it, onTestFinished } from "vitest"
import type { Deviation } from "./fixture/deviations.ts"
import { startFixture } from "./fixture/server.ts"

const cli = fileURLToPath(new URL("../src/cli.ts", import.meta.url))
const reports = mkdtempSync(join(tmpdir(), "conformance-cli-"))
afterAll(() => rmSync(reports, { recursive: true, force: true }))

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The CLI as QA runs it: its own process, configured by arguments and environment only. */
const conformance = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Outcome> => {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  const [code] = (await once(child, "exit")) as [number | null]
  return { code, stdout, stderr }
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)

let files = 0
/** A keys file as QA writes one. */
const keysFile = (lines: ReadonlyArray<string>) => {
  const path = join(reports, `keys-${++files}.txt`)
  writeFileSync(path, `${lines.join("\n")}\n`)
  return path
}

/** Everything the process printed holds none of the keys, and shows a key by its last four characters at most. */
const expectNoKeyIn = (outcome: Outcome, keys: ReadonlyArray<string>) => {
  const printed = outcome.stdout + outcome.stderr
  for (const key of keys) {
    expect(printed).not.toContain(key)
    expect(printed).not.toContain(key.slice(0, -4))
  }
}

const fixture = async (deviation?: Deviation) => {
  const started = await startFixture({ recoverySeconds: 1, deviation })
  onTestFinished(() => started.close())
  return started
}

describe("the command line", () => {
  it("exits 0 when nothing failed, ends with the summary line and writes JUnit and JSON reports", async () => {
    const { baseUrl, keys } = await fixture()
    const junit = join(reports, "ok.xml")
    const json = join(reports, "ok.json")
    const outcome = await conformance(
      [
        "--base-url",
        baseUrl,
        "--keys-file",
        keysFile(["# QA's keys", "", `pro=${keys.pro[0]}`]),
        "--grep",
        "listPets",
        "--junit",
        junit,
        "--json",
        json
      ]
    )
    expect(outcome.code, outcome.stderr).toBe(0)
    expect(lastLine(outcome.stdout)).toMatch(/^\d+ passed, 0 failed, 0 skipped$/)
    expect(outcome.stdout).toContain("PASS  spec      listPets: limit=1 returns one pet [pets.list-limit-1]")
    const report = JSON.parse(readFileSync(json, "utf8"))
    expect(report.summary.failed).toBe(0)
    expect(report.results.length).toBe(report.summary.passed)
    const xml = readFileSync(junit, "utf8")
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites [^>]*failures="0"/)
    expect(xml).toContain("<testcase classname=\"conformance.pets\" name=\"[spec] listPets: limit=1 returns one pet\"")
  })

  it("exits 1 when a check fails, showing the request, what was expected and what came back", async () => {
    const { baseUrl, keys } = await fixture("default-page-size-10")
    const junit = join(reports, "failed.xml")
    const outcome = await conformance(
      ["--base-url", baseUrl, "--grep", "pets.list-default-limit", "--junit", junit],
      { CONFORMANCE_KEY_FREE: keys.free[0]! }
    )
    expect(outcome.code, outcome.stderr).toBe(1)
    expect(outcome.stdout).toMatch(
      /FAIL {2}spec {6}listPets: 20 pets by default when more exist \[pets\.list-default-limit\]\n {8}request: {2}GET http:\/\/127\.0\.0\.1:\d+\/v1\/pets \(Bearer …\w{4} \(free key 1\)\)\n {8}expected: exactly 20 pets, the default page size \(more than 20 exist\)\n {8}received: 10 pets/
    )
    expect(lastLine(outcome.stdout)).toBe("0 passed, 1 failed, 0 skipped")
    expect(readFileSync(junit, "utf8")).toContain("<failure message=\"expected exactly 20 pets")
    expectNoKeyIn(outcome, [keys.free[0]!])
    expect(readFileSync(junit, "utf8")).not.toContain(keys.free[0]!.slice(0, -4))
  })

  it("takes the base URL and several keys of a plan from the environment", async () => {
    const { baseUrl, keys } = await fixture()
    const outcome = await conformance(["--grep", "free.recovery"], {
      CONFORMANCE_BASE_URL: baseUrl,
      CONFORMANCE_KEY_FREE: `${keys.free[0]},${keys.free[1]}`
    })
    expect(outcome.code, outcome.stderr).toBe(0)
    expect(lastLine(outcome.stdout)).toBe("1 passed, 0 failed, 0 skipped")
  })

  it("still takes keys as --key PLAN=KEY", async () => {
    const { baseUrl, keys } = await fixture()
    const outcome = await conformance([
      "--base-url",
      baseUrl,
      "--key",
      `free=${keys.free[0]}`,
      "--grep",
      "limit=1 returns"
    ])
    expect(outcome.code, outcome.stderr).toBe(0)
    expect(lastLine(outcome.stdout)).toBe("1 passed, 0 failed, 0 skipped")
  })

  it("takes the staff key as staff=KEY in the keys file or CONFORMANCE_KEY_STAFF, never printing it", async () => {
    const { baseUrl, keys, staffKeys } = await fixture()
    const fromFile = await conformance(
      [
        "--base-url",
        baseUrl,
        "--keys-file",
        keysFile([`pro=${keys.pro[0]}`, `free=${keys.free[0]}`, `staff=${staffKeys[0]}`]),
        "--grep",
        "store.deliver"
      ]
    )
    expect(fromFile.code, fromFile.stdout + fromFile.stderr).toBe(0)
    expect(fromFile.stdout).toContain(
      "PASS  extension deliverOrder with a staff key: the order becomes delivered and its pet sold [store.deliver]"
    )
    expect(lastLine(fromFile.stdout)).toBe("2 passed, 0 failed, 0 skipped")
    const fromEnvironment = await conformance(["--base-url", baseUrl, "--grep", "store.delete"], {
      CONFORMANCE_KEY_PRO: keys.pro[1]!,
      CONFORMANCE_KEY_STAFF: staffKeys[1]!
    })
    expect(fromEnvironment.code, fromEnvironment.stdout + fromEnvironment.stderr).toBe(0)
    expect(fromEnvironment.stdout).toContain("[store.delete]")
    expect(lastLine(fromEnvironment.stdout)).toMatch(/^\d+ passed, 0 failed, 0 skipped$/)
    expectNoKeyIn(fromFile, [...staffKeys, keys.pro[0]!, keys.free[0]!])
    expectNoKeyIn(fromEnvironment, [...staffKeys, keys.pro[1]!])
  })

  it("skips the staff checks without a staff key, saying how to give one", async () => {
    const { baseUrl, keys } = await fixture()
    const outcome = await conformance(["--base-url", baseUrl, "--grep", "store.deliver"], {
      CONFORMANCE_KEY_PRO: keys.pro[0]!
    })
    expect(outcome.code, outcome.stderr).toBe(0)
    expect(outcome.stdout).toContain(
      "SKIP  extension deliverOrder with a staff key: the order becomes delivered and its pet sold [store.deliver]: needs a staff key: " +
        "add staff=KEY to the --keys-file, or set CONFORMANCE_KEY_STAFF"
    )
  })

  it("exits 2 for a refused staff key or two staff keys, showing each by its last four characters", async () => {
    const { baseUrl, keys, staffKeys } = await fixture()
    const revoked = "fx_staff_revoked_key_7q6w"
    const refused = await conformance([
      "--base-url",
      baseUrl,
      "--keys-file",
      keysFile([`pro=${keys.pro[0]}`, `staff=${revoked}`])
    ])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain("the service refused a key: staff key (…7q6w) got 401")
    const twice = await conformance([
      "--base-url",
      baseUrl,
      "--keys-file",
      keysFile([`pro=${keys.pro[0]}`, ...staffKeys.map((key) => `staff=${key}`)])
    ])
    expect(twice.code).toBe(2)
    expect(twice.stderr).toContain("2 staff keys given: give one")
    expectNoKeyIn(refused, [revoked, keys.pro[0]!])
    expectNoKeyIn(twice, [...staffKeys, keys.pro[0]!])
  })

  it("exits 2 without a key, saying how to give one, rather than passing what it could not test", async () => {
    const { baseUrl } = await fixture()
    const outcome = await conformance(["--base-url", baseUrl])
    expect(outcome.code).toBe(2)
    expect(outcome.stdout).toBe("")
    expect(outcome.stderr).toContain("no API key given")
    expect(outcome.stderr).toContain("--keys-file FILE")
    expect(outcome.stderr).toContain("CONFORMANCE_KEY_FREE")
  })

  it("checks every key before any check, and exits 2 naming the plan and the last four characters of each refused one", async () => {
    const { baseUrl, keys } = await fixture()
    const revoked = "fx_pro_revoked_key_9z8y"
    const outcome = await conformance([
      "--base-url",
      baseUrl,
      "--keys-file",
      keysFile([`free=${keys.free[0]}`, `pro=${keys.pro[0]}`, `pro=${revoked}`])
    ])
    expect(outcome.code).toBe(2)
    expect(outcome.stdout).toBe("")
    expect(outcome.stderr).toContain("the service refused a key: pro key 2 (…9z8y) got 401")
    expectNoKeyIn(outcome, [revoked, keys.free[0]!, keys.pro[0]!])
  })

  it("exits 2 for a key given twice", async () => {
    const { baseUrl, keys } = await fixture()
    const outcome = await conformance([
      "--base-url",
      baseUrl,
      "--keys-file",
      keysFile([`free=${keys.free[0]}`, `free=${keys.free[0]}`])
    ])
    expect(outcome.code).toBe(2)
    expect(outcome.stderr).toContain("free key 2 (…")
    expect(outcome.stderr).toContain("is the same key as free key 1")
    expectNoKeyIn(outcome, [keys.free[0]!])
  })

  it("exits 2 for a keys file line that is not PLAN=KEY, naming the line and never its key", async () => {
    const secret = "psk_a_secret_that_lost_its_plan_1234"
    const outcome = await conformance([
      "--base-url",
      "http://127.0.0.1:1/v1",
      "--keys-file",
      keysFile(["# keys", secret])
    ])
    expect(outcome.code).toBe(2)
    expect(outcome.stderr).toMatch(
      /keys-\d+\.txt line 2 is not PLAN=KEY: each line is PLAN=KEY with PLAN one of free, pro, business, enterprise/
    )
    expectNoKeyIn(outcome, [secret])
  })

  it("never prints a key given where the command line does not expect one", async () => {
    const secret = "psk_misplaced_secret_key_5678"
    for (
      const args of [
        ["--key", `gold=${secret}`],
        ["--key", secret],
        [`free=${secret}`],
        ["--only", secret],
        ["--kye", `free=${secret}`]
      ]
    ) {
      const outcome = await conformance(["--base-url", "http://127.0.0.1:1/v1", ...args])
      expect(outcome.code, args.join(" ")).toBe(2)
      expect(outcome.stderr, args.join(" ")).not.toBe("")
      expectNoKeyIn(outcome, [secret])
    }
  })

  it("checks webhooks with --webhooks on a --webhook-listen address, and exits 2 for one that is not HOST:PORT", async () => {
    const { baseUrl, keys } = await fixture()
    const env = { CONFORMANCE_KEY_PRO: keys.pro[0]! }
    const outcome = await conformance(
      ["--base-url", baseUrl, "--grep", "webhooks.", "--webhook-listen", "127.0.0.1:0"],
      env
    )
    expect(outcome.code, outcome.stdout).toBe(0)
    expect(lastLine(outcome.stdout)).toBe("8 passed, 0 failed, 0 skipped")
    const without = await conformance(["--base-url", baseUrl, "--grep", "webhooks.register"], env)
    expect(without.stdout).toContain("SKIP")
    expect(without.stdout).toContain("--webhooks")
    const bad = await conformance(["--base-url", baseUrl, "--webhooks", "--webhook-listen", "localhost"], env)
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("--webhook-listen takes HOST:PORT")
    const badUrl = await conformance(["--base-url", baseUrl, "--webhook-public-url", "ftp://x"], env)
    expect(badUrl.code).toBe(2)
    expect(badUrl.stderr).toContain("--webhook-public-url must be an http(s) URL")
  })

  it("skips the keys.* checks without admin access, saying how to give it, and exits 2 for half of it", async () => {
    const { baseUrl, keys } = await fixture()
    const env = { CONFORMANCE_KEY_PRO: keys.pro[0]! }
    const without = await conformance(["--base-url", baseUrl, "--grep", "keys.", "--fuzz", "0"], env)
    expect(without.code, without.stderr).toBe(0)
    const hint = "give --admin-url URL, the admin listener's address, and the admin token in " +
      "CONFORMANCE_ADMIN_TOKEN or a file named by --admin-token-file, to check key expiry and rolling"
    expect(without.stdout).toContain(`[keys.expiry]: ${hint}`)
    expect(without.stdout).toContain(`[keys.rolling]: ${hint}`)
    expect(lastLine(without.stdout)).toBe("0 passed, 0 failed, 2 skipped")

    const noToken = await conformance(["--base-url", baseUrl, "--admin-url", "http://127.0.0.1:1"], env)
    expect(noToken.code).toBe(2)
    expect(noToken.stderr).toContain(
      "--admin-url needs the admin token: set CONFORMANCE_ADMIN_TOKEN, or put the token in a file and pass --admin-token-file FILE"
    )
    const tokenFile = join(reports, "admin-token.txt")
    writeFileSync(tokenFile, "fx-admin-token-never-printed-0000\n")
    const noUrl = await conformance(["--base-url", baseUrl, "--admin-token-file", tokenFile], env)
    expect(noUrl.code).toBe(2)
    expect(noUrl.stderr).toContain("--admin-token-file needs --admin-url, the admin listener's address")
    const emptyFile = join(reports, "empty-token.txt")
    writeFileSync(emptyFile, "\n")
    const empty = await conformance(
      ["--base-url", baseUrl, "--admin-url", "http://127.0.0.1:1", "--admin-token-file", emptyFile],
      env
    )
    expect(empty.code).toBe(2)
    expect(empty.stderr).toContain(`the admin token file ${emptyFile} is empty`)
  })

  it("runs only the spec's checks with --only spec", async () => {
    const { baseUrl, keys } = await fixture("no-405")
    const outcome = await conformance(["--base-url", baseUrl, "--only", "spec", "--grep", "create"], {
      CONFORMANCE_KEY_PRO: keys.pro[0]!
    })
    expect(outcome.code, outcome.stdout).toBe(0)
    expect(outcome.stdout).not.toContain("extension")
  })

  it("prints the fuzz seed it runs with, each fuzz failure as a curl command, and writes an HTML report with --html", async () => {
    const { baseUrl, keys } = await fixture("put-answered-200")
    const html = join(reports, "fuzz.html")
    const outcome = await conformance(
      ["--base-url", baseUrl, "--grep", "fuzz.methods", "--seed", "4242", "--fuzz", "10", "--html", html],
      { CONFORMANCE_KEY_PRO: keys.pro[0]! }
    )
    expect(outcome.code, outcome.stderr).toBe(1)
    expect(outcome.stderr).toContain("fuzz: seed 4242 (replay this run's generated requests with --seed 4242)")
    expect(outcome.stdout).toMatch(
      /request: {2}curl -i --globoff -X PUT '[^']+' -H "Authorization: Bearer \$CONFORMANCE_KEY" -H 'accept: application\/json'\n/
    )
    expect(outcome.stderr).toContain(`HTML report written to ${html}`)
    const page = readFileSync(html, "utf8")
    expect(page).toContain("seed 4242 (replay with --seed 4242)")
    expect(page).toContain("Does not conform: 1 failed")
    expectNoKeyIn(outcome, [keys.pro[0]!])
    expect(page).not.toContain(keys.pro[0]!)
  })

  it("checks against an --openapi document from a URL or a file, fails the check when it cannot be had, and exits 2 for a negative --fuzz", async () => {
    const { baseUrl, keys } = await fixture()
    const port = await freePort()
    const missing = await conformance(
      ["--base-url", baseUrl, "--grep", "openapi", "--openapi", `http://127.0.0.1:${port}/openapi.json`],
      { CONFORMANCE_KEY_PRO: keys.pro[0]! }
    )
    expect(missing.code).toBe(1)
    expect(missing.stdout).toContain("FAIL  spec      every response agrees with the deployment's OpenAPI document")
    expect(missing.stdout).toContain(`received: GET http://127.0.0.1:${port}/openapi.json gave no answer`)
    // A document from a file: the contract's own, which declares a WWW-Authenticate challenge on every 401, which the fixture never sends.
    const contractDocument = createRequire(import.meta.url).resolve("@petstore/contract/openapi.json")
    const fromFile = await conformance(
      ["--base-url", baseUrl, "--only", "spec", "--openapi", contractDocument, "--fuzz", "5", "--seed", "1"],
      { CONFORMANCE_KEY_PRO: keys.pro[0]! }
    )
    expect(fromFile.code).toBe(1)
    expect(fromFile.stdout).toMatch(
      /FAIL  spec      every response agrees with the deployment's OpenAPI document.*\n +request: {2}curl -i --globoff '[^']+\/v1\/pets[^']*' -H 'accept: application\/json'\n +expected: GET \/pets 401: the header WWW-Authenticate, which the document declares required/
    )
    const negative = await conformance(["--base-url", baseUrl, "--fuzz", "-1"], { CONFORMANCE_KEY_PRO: keys.pro[0]! })
    expect(negative.code).toBe(2)
    expect(negative.stderr).toContain("--fuzz takes a number of requests, 0 or more, not -1")
  })

  it("exits 2 with a clear message without a base URL", async () => {
    const outcome = await conformance([])
    expect(outcome.code).toBe(2)
    expect(outcome.stdout + outcome.stderr).toContain("base-url")
  })

  it("exits 2 for a --key that is not PLAN=KEY", async () => {
    const outcome = await conformance(["--base-url", "http://127.0.0.1:1/v1", "--key", "gold=abc"])
    expect(outcome.code).toBe(2)
    expect(outcome.stderr).toContain(
      "--key takes PLAN=KEY with PLAN one of free, pro, business, enterprise; --key number 1 names the plan \"gold\", which does not exist"
    )
  })

  it("exits 2 when the base URL does not answer", async () => {
    const port = await freePort()
    const outcome = await conformance(["--base-url", `http://127.0.0.1:${port}/v1`], {
      CONFORMANCE_KEY_FREE: "fx_free_never_sent_0000"
    })
    expect(outcome.code).toBe(2)
    expect(outcome.stderr).toContain(
      `cannot reach http://127.0.0.1:${port}/v1: the connection was refused: nothing listens there (ECONNREFUSED)`
    )
  })
})
