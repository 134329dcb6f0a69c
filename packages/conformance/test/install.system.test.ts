import { execFile, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RealServer, startRealServer } from "./support/realServer.ts"

const packageDir = fileURLToPath(new URL("..", import.meta.url))
const work = mkdtempSync(join(tmpdir(), "conformance-install-"))
const run = promisify(execFile)

let server: RealServer | undefined
beforeAll(async () => {
  server = await startRealServer("pglite")
})
afterAll(async () => {
  await server?.stop()
  rmSync(work, { recursive: true, force: true })
})

/** The installed command, run as a user's shell runs it: by its bin link, with Node from PATH. */
const installedCli = async (bin: string, args: ReadonlyArray<string>) => {
  const child = spawn(bin, args, {
    env: { PATH: process.env.PATH ?? "", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk) => (stdout += chunk))
  child.stderr.on("data", (chunk) => (stderr += chunk))
  const [code] = (await once(child, "exit")) as [number | null]
  return { code, stdout, stderr }
}

describe("the package as users install it", () => {
  it("packs into a tarball that npm installs into an empty folder offline, with no dependency, and whose command runs", async () => {
    const packs = join(work, "packs")
    const app = join(work, "app")
    mkdirSync(packs)
    mkdirSync(app)
    // pnpm pack builds first (prepack), so the tarball holds this source's bundle.
    await run("pnpm", ["pack", "--pack-destination", packs], { cwd: packageDir })
    const tarball = readdirSync(packs).find((name) => name.endsWith(".tgz"))
    expect(tarball).toBeDefined()

    // Offline with an empty cache: npm could not fetch a single dependency, so there must be none to fetch.
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(packs, tarball!)], {
      cwd: app,
      env: { ...process.env, npm_config_cache: join(work, "npm-cache") }
    })
    const installed = JSON.parse(
      readFileSync(join(app, "node_modules", "@petstore", "conformance", "package.json"), "utf8")
    )
    expect(installed.dependencies ?? {}).toEqual({})
    expect(readdirSync(join(app, "node_modules")).sort()).toEqual([".bin", ".package-lock.json", "@petstore"])

    const bin = join(app, "node_modules", ".bin", "petstore-conformance")
    const version = await installedCli(bin, ["--version"])
    expect(version.stdout.trim()).toBe("petstore-conformance v1.0.0")

    const key = await server!.createKey("free")
    const keys = join(work, "keys.txt")
    writeFileSync(keys, `free=${key}\n`)
    const checked = await installedCli(bin, [
      "--base-url",
      server!.baseUrl,
      "--keys-file",
      keys,
      "--grep",
      "pets.create"
    ])
    expect(checked.code, checked.stderr).toBe(0)
    expect(checked.stdout).toContain(
      "PASS  spec      createPet: 201 with the created Pet, equal to what was sent [pets.create]"
    )
    expect(checked.stdout.trimEnd().split("\n").at(-1)).toBe("2 passed, 0 failed, 0 skipped")
    expect(checked.stdout + checked.stderr).not.toContain(key.slice(0, -4))

    // The programmatic API, imported by its package name from the folder it was installed in.
    const script = "import { runSuite, formatSummary } from '@petstore/conformance'\n" +
      "const result = await runSuite({ baseUrl: process.env.BASE_URL, keys: { free: [process.env.KEY] }, grep: 'limit=1 returns' })\n" +
      "console.log(formatSummary(result.summary))"
    const imported = await run(process.execPath, ["--input-type=module", "--eval", script], {
      cwd: app,
      env: { PATH: process.env.PATH ?? "", BASE_URL: server!.baseUrl, KEY: key }
    })
    expect(imported.stdout.trim()).toBe("1 passed, 0 failed, 0 skipped")
  })
})
