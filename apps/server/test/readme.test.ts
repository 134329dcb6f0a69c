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
 */
const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url))
const readme = join(repositoryRoot, "README.md")

const firstScreen = blockContaining(readme, "pnpm start   # install and start the server").text
const fromZero = blockContaining(readme, "# 1. Issue an API key").text

describe("the README's first commands, as printed, against `pnpm start`", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "petstore-readme-"))
  let server: ChildProcess | undefined
  let output = ""
  let port: number
  let adminPort: number

  /** Runs a printed block with bash, in the repository's root, and gives its output. */
  const shell = (script: string) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile("bash", ["-e", "-c", script], { cwd: repositoryRoot, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
    })

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
    // The README's `# → …` line is the answer, `…` standing for what varies.
    const shown = /^# → (.+)$/m.exec(issue!)![1]!
    const pattern = new RegExp(
      `^${shown.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`
    )
    expect(issued.stdout).toMatch(pattern)
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
})
