import { type ChildProcess, execFile, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { blockContaining, eventually, freePort, substituted } from "@petstore/test-support"

/**
 * The root README's first screen and "From zero to an authenticated request", run as a new user runs them:
 * `pnpm start` as printed, from the repository's root, then the curl commands as printed against it. Only the
 * ports differ (a free pair for 8080 and 8081, through PORT and ADMIN_PORT and in the curl commands), and the
 * embedded database's folder (DATA_DIR), so that the test never touches a developer's `./.data`. The install
 * (`npm install -g pnpm@10 && pnpm install`) and `pnpm test` on the same line are not run here: they change the
 * machine, or are this suite; CI's `.ci/run` runs both.
 *
 * load-tests/README.md's key commands run here too, against the same server: its `newkey` (step 2 of its first
 * block), its `API_KEYS` loop and its curl. The keys CLI finds the admin listener on its own port through
 * ADMIN_URL, the variable that README names for it; k6 itself is load-tests/test/k6.system.test.ts's.
 */
const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url))
const readme = join(repositoryRoot, "README.md")
const loadTestsReadme = join(repositoryRoot, "load-tests/README.md")

const firstScreen = blockContaining(readme, "pnpm start   # install and start the server").text
const fromZero = blockContaining(readme, "# 1. Issue an API key").text

describe("the README's first commands, as printed, against `pnpm start`", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "petstore-readme-"))
  let server: ChildProcess | undefined
  let output = ""
  let port: number
  let adminPort: number

  /** Runs a printed block with bash, in the repository's root, and gives its output. */
  const shell = (script: string, env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        "bash",
        ["-e", "-c", script],
        { cwd: repositoryRoot, env: { ...process.env, ...env }, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
      )
    })

  /** A README's `# → …` line as a pattern of the whole answer, `…` standing for what varies. */
  const answerShownIn = (block: string) => {
    const shown = /^# → (.+)$/m.exec(block)![1]!
    return new RegExp(`^${shown.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)
  }

  beforeAll(async () => {
    ;[port, adminPort] = [await freePort(), await freePort()]
    const start = /^npm install -g pnpm@10 && pnpm install && (ADMIN_TOKEN=\S+ pnpm start) +# install and start/m
      .exec(firstScreen)?.[1]
    expect(start, firstScreen).toBeDefined()
    // Its own process group: `pnpm start` runs turbo, then node, and all of them stop with it.
    server = spawn("bash", ["-c", start!], {
      cwd: repositoryRoot,
      env: { ...process.env, PORT: String(port), ADMIN_PORT: String(adminPort), DATA_DIR: dataDir },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    server.stdout!.on("data", (chunk) => (output += chunk))
    server.stderr!.on("data", (chunk) => (output += chunk))
    // A hang guard: turbo's build check, then a new embedded database (24 s on a busy machine, measured).
    const ready = await eventually(
      () => {
        if (server!.exitCode !== null) throw new Error(`pnpm start exited (${server!.exitCode}):\n${output}`)
        return fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
          (response) => response.status === 200,
          () => false
        )
      },
      180_000,
      200
    )
    expect(ready, output).toBe(true)
  }, 200_000)

  afterAll(async () => {
    if (server?.pid !== undefined && server.exitCode === null && server.signalCode === null) {
      const exited = once(server, "exit")
      process.kill(-server.pid, "SIGTERM")
      const timer = setTimeout(() => process.kill(-server!.pid!, "SIGKILL"), 15_000)
      await exited
      clearTimeout(timer)
    }
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("issues a key with the first curl, which answers as the README shows, and uses it with the next two", async () => {
    const ports: Array<[string, string]> = [
      ["localhost:8081", `localhost:${adminPort}`],
      ["localhost:8080", `localhost:${port}`]
    ]
    const [issue, use] = fromZero.split(/^# 2\. Use it\.\n/m)
    expect(use, fromZero).toBeDefined()

    const issued = await shell(substituted(issue!, [ports[0]!]))
    expect(issued.code, issued.stderr).toBe(0)
    expect(issued.stdout).toMatch(answerShownIn(issue!))
    const { key } = JSON.parse(issued.stdout) as { key: string }

    // The reader pastes the key where the README shows `psk_…`.
    const used = await shell(substituted(use!, [...ports.slice(1), ["API_KEY=psk_…", `API_KEY=${key}`]]))
    expect(used.code, used.stderr).toBe(0)
    // Two answers back to back: the pet created, then the list holding it.
    const boundary = used.stdout.indexOf("}[")
    expect(boundary, used.stdout).toBeGreaterThan(0)
    const created = JSON.parse(used.stdout.slice(0, boundary + 1)) as { id: number; name: string }
    const listed = JSON.parse(used.stdout.slice(boundary + 1)) as Array<{ id: number; name: string }>
    expect(created).toMatchObject({ name: "Rex" })
    expect(listed).toContainEqual(expect.objectContaining({ id: created.id, name: "Rex" }))
  })

  it("issues load-tests/README.md's keys with its newkey, its API_KEYS loop and its curl, as printed", async () => {
    const adminToken = /ADMIN_TOKEN=(\S+) pnpm start/.exec(firstScreen)?.[1]
    expect(adminToken, firstScreen).toBeDefined()
    const keysFor = { ADMIN_URL: `http://127.0.0.1:${adminPort}` }

    // Step 2 of the first block as printed: the server of its step 1 is this suite's, and k6 (step 3) is not here.
    const local = blockContaining(loadTestsReadme, "# 2. Keys, in another terminal.").text
    const step2 = /^# 2\. Keys[^\n]*\n([\s\S]*?)^# 3\. Run\./m.exec(local)?.[1]
    expect(step2, local).toBeDefined()
    const loop = blockContaining(loadTestsReadme, "export API_KEYS=$(for i in 1 2 3 4 5").text
    const issued = await shell(
      `${step2}${loop}echo "$API_KEY_FREE $API_KEY_PRO $API_KEY_BUSINESS"\necho "$API_KEYS"\n`,
      keysFor
    )
    expect(issued.code, issued.stderr).toBe(0)
    const [perPlan, loaded] = issued.stdout.trim().split("\n")
    expect(perPlan!.split(" "), issued.stdout).toEqual(Array(3).fill(expect.stringMatching(/^psk_\S+$/)))
    expect(loaded!.split(","), issued.stdout).toEqual(Array(5).fill(expect.stringMatching(/^psk_\S+$/)))
    expect(new Set([...perPlan!.split(" "), ...loaded!.split(",")]).size).toBe(8)

    // The same through the admin API: the curl as printed, with the token step 2 exports.
    const curl = blockContaining(loadTestsReadme, "localhost:8081/admin/keys").text
    const answered = await shell(substituted(curl, [["localhost:8081", `localhost:${adminPort}`]]), {
      ADMIN_TOKEN: adminToken!
    })
    expect(answered.code, answered.stderr).toBe(0)
    expect(answered.stdout).toMatch(answerShownIn(curl))
    const key = JSON.parse(answered.stdout) as { key: string }
    const used = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${key.key}` } })
    expect(used.status).toBe(200)
  })
})
