import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, send } from "./support/http.ts"
import { ADMIN_TOKEN, type RunningServer, startServer } from "./support/testServer.ts"

const cli = fileURLToPath(new URL("../src/cli/keys.ts", import.meta.url))

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `pnpm keys` as its own process. Asynchronously, because the server it
 * talks to runs in this process and must keep answering meanwhile.
 */
const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<Outcome>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

describe("pnpm keys", () => {
  let server: RunningServer
  const keys = (...args: Array<string>) => run(args, { ADMIN_URL: server.adminUrl, ADMIN_TOKEN })
  const getPets = (key: string) => send(`${server.baseUrl}/pets`, { headers: bearer(key) })
  const created: { id: string; key: string } = { id: "", key: "" }

  beforeAll(async () => {
    server = await startServer("pglite")
  })
  afterAll(() => server?.stop())

  it("create prints the new key's id, plan, limits and its secret, once; the secret authenticates", async () => {
    const outcome = await keys("create", "--plan", "pro", "--name", "ci bot")
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    const id = outcome.stdout.match(/\bkey_[0-9a-z]{16}\b/)?.[0]
    const key = outcome.stdout.match(/\bpsk_\S+/)?.[0]
    expect(id).toBeDefined()
    expect(key).toBeDefined()
    expect(outcome.stdout).toMatch(/plan:\s+pro/)
    expect(outcome.stdout).toMatch(/300\/min 10000\/day/)
    expect(outcome.stdout).toMatch(/shown only this once/)
    Object.assign(created, { id, key })
    expect((await getPets(created.key)).status).toBe(200)
  })

  it("list shows the key by id, plan, limits and name, never its secret", async () => {
    const outcome = await keys("list")
    expect(outcome.code).toBe(0)
    const line = outcome.stdout.split("\n").find((line) => line.startsWith(created.id))
    expect(line).toMatch(/\bpro\b.*300\/min 10000\/day.*ci bot/)
    expect(outcome.stdout).not.toContain("psk_")
    expect(outcome.stdout).not.toContain(created.key)
  })

  it("list --json prints the admin API's answer", async () => {
    const outcome = await keys("list", "--json")
    expect(outcome.code).toBe(0)
    expect(JSON.parse(outcome.stdout)).toContainEqual(expect.objectContaining({ id: created.id, plan: "pro" }))
  })

  it("set-plan changes the plan", async () => {
    const outcome = await keys("set-plan", created.id, "--plan", "enterprise", "--per-minute", "7", "--per-day", "70")
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    const listed = await keys("list", "--json")
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({ id: created.id, plan: "enterprise", limits: { perMinute: 7, perDay: 70 } })
    )
  })

  it("revoke makes the key refused with 401", async () => {
    const outcome = await keys("revoke", created.id)
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    expect((await getPets(created.key)).status).toBe(401)
    expect((await keys("list")).stdout).not.toContain(created.id)
  })

  it("a refusal of the server exits 1 with its code and message on one line", async () => {
    const outcome = await keys("create", "--plan", "enterprise")
    expect(outcome.code).toBe(1)
    expect(outcome.stdout).toBe("")
    expect(outcome.stderr.trim().split("\n")).toEqual(["keys: invalid_request: An enterprise key needs `limits`"])
  })

  it("an unknown key exits 1 with not_found", async () => {
    const outcome = await keys("revoke", "key_0000000000000000")
    expect(outcome.code).toBe(1)
    expect(outcome.stderr.trim()).toMatch(/^keys: not_found: /)
  })

  it("a wrong admin token exits 1 with unauthorized", async () => {
    const outcome = await run(["list"], { ADMIN_URL: server.adminUrl, ADMIN_TOKEN: "not-the-admin-token" })
    expect(outcome.code).toBe(1)
    expect(outcome.stderr.trim()).toMatch(/^keys: unauthorized: /)
  })

  it("a missing ADMIN_TOKEN exits 2 with one line naming it", async () => {
    const outcome = await run(["list"], { ADMIN_URL: server.adminUrl })
    expect(outcome.code).toBe(2)
    const lines = outcome.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("ADMIN_TOKEN")
  })

  it("an unreachable server exits 1 with one line naming ADMIN_URL", async () => {
    const outcome = await run(["list"], { ADMIN_URL: "http://127.0.0.1:1", ADMIN_TOKEN })
    expect(outcome.code).toBe(1)
    const lines = outcome.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/ADMIN_URL/)
  })
})
