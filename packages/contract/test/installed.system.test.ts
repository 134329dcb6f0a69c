import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
// By path, not by package name: the test support depends on this package, and turbo refuses a cycle.
import { ADMIN_TOKEN } from "../../test-support/src/keys.ts"
import { blockContaining } from "../../test-support/src/readme.ts"
import { runScript } from "../../test-support/src/scripts.ts"
import { serverEntry, type StartedProcess, startServerProcess } from "../../test-support/src/serverProcess.ts"

const packageDir = fileURLToPath(new URL("..", import.meta.url))
const repositoryRoot = join(packageDir, "..", "..")
const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"))
const examples = readdirSync(join(packageDir, "examples")).filter((name) => name.endsWith(".ts")).sort()
const work = mkdtempSync(join(tmpdir(), "contract-install-"))
const run = promisify(execFile)

let server: StartedProcess | undefined
// The bounds catch a hang, not judge the machine: on a busy one, an embedded database takes minutes to open (over
// 150 s at load 20: the server runs initdb and every migration), and npm fetches effect from the registry. The
// hook outlasts the server's own readiness bound (300 s), which fails with the server's output.
beforeAll(async () => {
  server = await startServerProcess(
    { DATA_DIR: ":memory:" },
    undefined,
    serverEntry(join(repositoryRoot, "apps", "server", "package.json"))
  )
}, 400_000)
afterAll(async () => {
  await server?.server.stop()
  rmSync(work, { recursive: true, force: true })
})

/**
 * `pnpm pack` as the README says, in a copy of the package laid out as in the
 * repository: its prepack build writes the copy's `dist`, never the one the
 * rest of the repository (the server this test runs among them) is using.
 */
const packTheContract = async (packs: string) => {
  const stage = join(work, "stage")
  const copy = join(stage, "packages", "contract")
  mkdirSync(copy, { recursive: true })
  cpSync(join(repositoryRoot, "tsconfig.base.json"), join(stage, "tsconfig.base.json"))
  for (
    const entry of [
      "package.json",
      "tsconfig.build.json",
      "README.md",
      "openapi.json",
      "openapi.admin.json",
      "src",
      "examples"
    ]
  ) {
    cpSync(join(packageDir, entry), join(copy, entry), { recursive: true })
  }
  symlinkSync(join(packageDir, "node_modules"), join(copy, "node_modules"))
  await run("pnpm", ["pack", "--pack-destination", packs], { cwd: copy })
  const tarball = readdirSync(packs).find((name) => name.endsWith(".tgz"))
  expect(tarball).toBeDefined()
  return join(packs, tarball!)
}

/** packages/contract/README.md, whose blocks this test runs as printed. */
const readme = join(repositoryRoot, "packages/contract/README.md")

/** Each example's block in the README, by a line only it holds (client.test.ts holds each to its file). */
const printedExample: Record<string, string> = {
  "admin.ts": "revoked ${issued.id}",
  "errors.ts": "ordered ${rex.name}: order ${first.id}",
  "quickstart.ts": "created ${rex.name}: id ${rex.id}"
}

describe("the package as users install it, outside the repository", () => {
  it("packs, installs beside effect from the registry, type-checks and runs the README's examples", async () => {
    const packs = join(work, "packs")
    const app = join(work, "app")
    mkdirSync(packs)
    mkdirSync(app)
    const tarball = await packTheContract(packs)

    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
    const effect = `effect@${manifest.peerDependencies.effect}`
    await run("npm", ["install", "--no-audit", "--no-fund", tarball, effect], { cwd: app })
    const installed = JSON.parse(
      readFileSync(join(app, "node_modules", "@petstore", "contract", "package.json"), "utf8")
    )
    expect(installed.dependencies ?? {}).toEqual({})
    expect(installed.peerDependencies).toEqual({ effect: manifest.peerDependencies.effect })
    // One effect, the app's: the client's classes and services are the ones the app's program uses.
    expect(readdirSync(join(app, "node_modules")).sort()).toEqual([".package-lock.json", "@petstore", "effect"])
    expect(readdirSync(join(app, "node_modules", "@petstore", "contract")).sort()).toEqual([
      "README.md",
      "dist",
      "examples",
      "openapi.admin.json",
      "openapi.json",
      "package.json",
      "src"
    ])

    // The examples as the README prints them.
    expect(examples, "every example is run here").toEqual(Object.keys(printedExample))
    mkdirSync(join(app, "examples"))
    for (const [name, line] of Object.entries(printedExample)) {
      writeFileSync(join(app, "examples", name), blockContaining(readme, line).text)
    }
    // The tsconfig.json the README gives, and no lib check skipped: the package's declarations are checked too.
    writeFileSync(join(app, "tsconfig.json"), blockContaining(readme, "\"include\": [\"examples\"]").text)
    const tsc = join(packageDir, "node_modules", ".bin", "tsc")
    const checked = await run(tsc, ["-p", "tsconfig.json"], { cwd: app }).catch((error) => error)
    expect(`${checked.stdout}${checked.stderr}`).toBe("")

    const env = {
      PETSTORE_URL: `${server!.origin}/v1`,
      PETSTORE_API_KEY: await server!.createKey("free"),
      ADMIN_URL: server!.admin,
      ADMIN_TOKEN
    }
    // One after another, on an empty store: errors.ts first, whose output the README prints.
    const outputs: Record<string, ReadonlyArray<string>> = {}
    for (const name of ["errors.ts", "admin.ts", "quickstart.ts"]) {
      const outcome = await runScript(join(app, "examples", name), [], env)
      expect(outcome.stderr, name).toBe("")
      expect(outcome.code, name).toBe(0)
      outputs[name] = outcome.stdout.trim().split("\n")
    }

    // Each `catchTag` of the examples was hit: the server's 404 answers came back as `NotFound`.
    expect(outputs["errors.ts"]).toEqual(blockContaining(readme, "no such order (404)").text.trim().split("\n"))
    expect(outputs["errors.ts"]?.[0]).toMatch(/^no such order \(404\): /)
    expect(outputs["admin.ts"]).toEqual([
      expect.stringMatching(/^issued key_[0-9a-z]{16} on the free plan: 60 requests a minute$/),
      expect.stringMatching(/^revoked key_[0-9a-z]{16}$/),
      "no such key (404): No live API key has id key_0000000000000000"
    ])
    expect(outputs["quickstart.ts"]?.[0]).toMatch(/^created Rex: id \d+, available$/)
    expect(outputs["quickstart.ts"]?.at(-1)).toBe("available: Rex")
  }, 600_000)
})
