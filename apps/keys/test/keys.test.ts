import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, bearer, runScript, send, type StartedProcess, startServerProcess } from "@petstore/test-support"

/** The bundle `pnpm keys` runs, built from the sources by `buildOnce.ts`. */
const cli = fileURLToPath(new URL("../dist/main.js", import.meta.url))

/** The server (its compiled build, `serverEntry`) as its own process, on PGlite in memory. */
interface RunningServer {
  readonly baseUrl: string
  readonly adminUrl: string
  readonly createKey: StartedProcess["createKeyWithId"]
  readonly stop: () => Promise<void>
}

const startServer = async (): Promise<RunningServer> => {
  const started = await startServerProcess({ DATA_DIR: ":memory:" })
  return {
    baseUrl: `${started.origin}/v1`,
    adminUrl: started.admin,
    createKey: started.createKeyWithId,
    stop: started.server.stop
  }
}

/** Runs `pnpm keys` as its own process. */
const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  runScript(cli, args, { NO_COLOR: "1", ...env })

describe("pnpm keys", () => {
  let server: RunningServer
  const keys = (...args: Array<string>) => run(args, { ADMIN_URL: server.adminUrl, ADMIN_TOKEN })
  const getPets = (key: string) => send(`${server.baseUrl}/pets`, { headers: bearer(key) })
  const created: { id: string; key: string } = { id: "", key: "" }

  beforeAll(async () => {
    server = await startServer()
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

  it("list shows the key by id, plan, limits, role and name, never its secret", async () => {
    const outcome = await keys("list")
    expect(outcome.code).toBe(0)
    const line = outcome.stdout.split("\n").find((line) => line.startsWith(created.id))
    expect(line).toMatch(/\bpro\b.*300\/min 10000\/day +customer +ci bot/)
    expect(outcome.stdout).not.toContain("psk_")
    expect(outcome.stdout).not.toContain(created.key)
  })

  it("list starts with a header row whose columns line up with the keys'", async () => {
    const outcome = await keys("list")
    const [header, ...rows] = outcome.stdout.trimEnd().split("\n")
    expect(header).toMatch(/^ID +PLAN +LIMITS +ROLE +NAME +CREATED +EXPIRES +LAST USED$/)
    const row = rows.find((line) => line.startsWith(created.id))!
    for (
      const [column, value] of [["PLAN", "pro"], ["LIMITS", "300/min"], ["ROLE", "customer"], [
        "NAME",
        "ci bot"
      ]] as const
    ) {
      expect(row.indexOf(value), column).toBe(header!.indexOf(column))
    }
  })

  it("create --expires-in sets the expiry; list shows it, and the last use to the minute", async () => {
    const before = Date.now()
    const outcome = await keys("create", "--plan", "free", "--name", "trial", "--expires-in", "30d")
    expect(outcome.code).toBe(0)
    const id = outcome.stdout.match(/\bkey_[0-9a-z]{16}\b/)![0]
    const key = outcome.stdout.match(/\bpsk_\S+/)![0]
    const expires = new Date(outcome.stdout.match(/expires:\s+(\S+)/)![1]!).getTime()
    expect(expires).toBeGreaterThanOrEqual(before + 30 * 86_400_000)
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000)
    expect((await getPets(key)).status).toBe(200)
    const listed = await keys("list")
    const [header, ...rows] = listed.stdout.trimEnd().split("\n")
    const row = rows.find((line) => line.startsWith(id))!
    expect(row.slice(header!.indexOf("EXPIRES"))).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\dZ +\d{4}-\d\d-\d\dT\d\d:\d\dZ$/)
    const refused = await keys("create", "--plan", "free", "--expires-in", "soon")
    expect(refused.code).toBe(2)
  })

  it("set-expiry sets or clears a key's expiry, and wants exactly one of --expires-in and --never", async () => {
    const { id } = await server.createKey("free")
    const set = await keys("set-expiry", id, "--expires-in", "12h")
    expect(set.code).toBe(0)
    expect(set.stdout).toMatch(new RegExp(`^Updated ${id}: expires \\d{4}-`))
    const cleared = await keys("set-expiry", id, "--never")
    expect(cleared.stdout.trim()).toBe(`Updated ${id}: never expires`)
    expect((await keys("set-expiry", id)).code).toBe(2)
    expect((await keys("set-expiry", id, "--never", "--expires-in", "1h")).code).toBe(2)
  })

  it("roll prints a new secret for the same key; the old one keeps working for the overlap", async () => {
    const { id, key } = await server.createKey("pro")
    const outcome = await keys("roll", id, "--overlap", "1h")
    expect(outcome.code).toBe(0)
    expect(outcome.stdout).toContain(`Rolled ${id}`)
    const rolled = outcome.stdout.match(/\bpsk_[0-9A-Za-z]{49}\b/)![0]
    expect(rolled).not.toBe(key)
    expect(outcome.stdout).toMatch(/previous secret works until \d{4}-/)
    expect((await getPets(rolled)).status).toBe(200)
    expect((await getPets(key)).status).toBe(200)
    const cut = await keys("roll", id, "--overlap", "0s", "--json")
    expect(JSON.parse(cut.stdout)).toMatchObject({ id, key: expect.stringMatching(/^psk_/) })
    expect((await getPets(rolled)).status).toBe(401)
  })

  it("audit shows the admin changes of a key, newest first, never a secret", async () => {
    const { id, key } = await server.createKey("free")
    await keys("set-plan", id, "--plan", "pro")
    await keys("revoke", id)
    const outcome = await keys("audit", "--key", id)
    expect(outcome.code).toBe(0)
    const [header, ...rows] = outcome.stdout.trimEnd().split("\n")
    expect(header).toMatch(/^TIME +ACTION +KEY +FROM +CHANGES$/)
    expect(rows.map((row) => row.split(/ +/)[1])).toEqual(["key.revoked", "key.updated", "key.created"])
    expect(outcome.stdout).not.toContain(key)
    const paged = await keys("audit", "--key", id, "--limit", "1")
    expect(paged.stdout).toMatch(/Older entries: keys audit --cursor \S+/)
    const only = await keys("audit", "--key", id, "--action", "key.updated", "--json")
    expect(JSON.parse(only.stdout).entries).toHaveLength(1)
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

  it("create --role staff issues a staff key; set-role changes a key's role", async () => {
    const outcome = await keys("create", "--plan", "free", "--role", "staff")
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    expect(outcome.stdout).toMatch(/role:\s+staff/)
    const id = outcome.stdout.match(/\bkey_[0-9a-z]{16}\b/)![0]
    const listedAsStaff = (await keys("list")).stdout.split("\n").find((line) => line.startsWith(id))
    expect(listedAsStaff).toMatch(/ staff +- /)
    const demoted = await keys("set-role", id, "--role", "customer")
    expect(demoted.stderr).toBe("")
    expect(demoted.code).toBe(0)
    expect(demoted.stdout).toContain(`Updated ${id}: role customer`)
    const listed = JSON.parse((await keys("list", "--json")).stdout) as Array<{ id: string; role?: string }>
    expect(listed.find((key) => key.id === id)).not.toHaveProperty("role")
    const promoted = await keys("set-role", id, "--role", "staff", "--json")
    expect(JSON.parse(promoted.stdout)).toMatchObject({ id, role: "staff" })
    const refused = await keys("set-role", id, "--role", "owner")
    expect(refused.code).toBe(2)
  })

  it("revoke makes the key refused with 401", async () => {
    const outcome = await keys("revoke", created.id)
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    expect((await getPets(created.key)).status).toBe(401)
    expect((await keys("list")).stdout).not.toContain(created.id)
  })

  it("usage shows both windows and the ban; unban ends the ban", async () => {
    const { id, key } = await server.createKey("enterprise", { perMinute: 1, perDay: 50 })
    // One admitted, then refused beyond the threshold (the per-minute limit, 1): banned, within a minute.
    let answer = await getPets(key)
    for (let i = 0; i < 10 && answer.body?.code !== "api_key_banned"; i++) answer = await getPets(key)
    expect(answer.body).toMatchObject({ code: "api_key_banned" })

    const banned = await keys("usage", id)
    expect(banned.stderr).toBe("")
    expect(banned.code).toBe(0)
    expect(banned.stdout).toMatch(new RegExp(`^${id}\n`))
    // Counts depend on where the minute turned; the windows' shape and limits do not.
    expect(banned.stdout).toMatch(/\n  minute: [01] of 1 used, [01] left, resets \d{4}-\d\d-\d\dT\d\d:\d\d:00Z\n/)
    expect(banned.stdout).toMatch(/\n  day: +[12] of 50 used, 4[89] left, resets \d{4}-\d\d-\d\dT00:00:00Z\n/)
    expect(banned.stdout).toMatch(/ban: +until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/)

    const unban = await keys("unban", id)
    expect(unban.stderr).toBe("")
    expect(unban.code).toBe(0)
    expect(unban.stdout).toBe(`Unbanned ${id}: its ban has ended.\n`)
    // Answered while limited, never while banned.
    expect((await send(`${server.baseUrl}/rate_limit`, { headers: bearer(key) })).body).toMatchObject({ ban: null })
    const after = await keys("usage", id, "--json")
    expect(JSON.parse(after.stdout)).toMatchObject({ day: { limit: 50 }, ban: null })

    const again = await keys("unban", id)
    expect(again.stderr).toBe("")
    expect(again.code).toBe(0)
    expect(again.stdout).toBe(`${id} was not banned: nothing to do.\n`)
    expect(JSON.parse((await keys("unban", id, "--json")).stdout)).toEqual({ id, unbanned: true, wasBanned: false })
  })

  it("usage and unban of an unknown key exit 1 with not_found", async () => {
    for (const command of ["usage", "unban"]) {
      const outcome = await keys(command, "key_0000000000000000")
      expect(outcome.code).toBe(1)
      expect(outcome.stderr.trim()).toMatch(/^keys: not_found: /)
    }
  })

  it.each([
    [["create", "--plan", "bogus"], /^keys: Invalid value for flag --plan: "bogus"/, "keys create --help"],
    [["create"], /^keys: Missing required flag: --plan$/, "keys create --help"],
    [["unban"], /^keys: Missing required argument: id$/, "keys unban --help"],
    [["usage", "not-a-key-id"], /^keys: Invalid value for argument <id>: "not-a-key-id"/, "keys usage --help"],
    [
      ["create", "--plan", "enterprise", "--per-minute", "5"],
      /^keys: --per-minute and --per-day go together$/,
      "keys create --help"
    ],
    [
      ["create", "--plan", "enterprise"],
      /^keys: an enterprise key needs --per-minute and --per-day$/,
      "keys create --help"
    ],
    [
      ["create", "--plan", "pro", "--per-minute", "5", "--per-day", "50"],
      /^keys: --per-minute and --per-day are for enterprise keys only: the pro plan's limits are fixed$/,
      "keys create --help"
    ],
    [
      ["set-plan", "key_0000000000000000", "--plan", "free", "--per-minute", "5", "--per-day", "50"],
      /^keys: --per-minute and --per-day are for enterprise keys only: the free plan's limits are fixed$/,
      "keys set-plan --help"
    ],
    [["bogus"], /^keys: Unknown subcommand "bogus"/, "keys --help"]
  ])(
    "a mistyped command (%j) exits 2 with its error first, on one line, and where the help is",
    async (args, error, help) => {
      const outcome = await keys(...args)
      expect(outcome.code).toBe(2)
      expect(outcome.stdout).toBe("")
      expect(outcome.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(error), `Try '${help}'.`])
    }
  )

  it("a refusal of the server exits 1 with its code on one line, naming the CLI's flags, not the API's fields", async () => {
    // Only the server knows the key's plan now: an enterprise key keeps its limits, any other needs new ones.
    const { id } = await server.createKey("pro")
    const outcome = await keys("set-plan", id, "--plan", "enterprise")
    expect(outcome.code).toBe(1)
    expect(outcome.stdout).toBe("")
    expect(outcome.stderr.trim().split("\n")).toEqual([
      "keys: invalid_request: --per-minute and --per-day: required for the enterprise plan"
    ])
  })

  it("an unknown key exits 1 with not_found", async () => {
    const outcome = await keys("revoke", "key_0000000000000000")
    expect(outcome.code).toBe(1)
    expect(outcome.stderr.trim()).toMatch(/^keys: not_found: /)
  })

  it("a wrong admin token exits 1 with unauthorized", async () => {
    const outcome = await run(["list"], { ADMIN_URL: server.adminUrl, ADMIN_TOKEN: "not-the-admin-token" })
    expect(outcome.code).toBe(1)
    expect(outcome.stderr.trim()).toBe(
      `keys: unauthorized: ADMIN_TOKEN is not the admin token of the server at ${server.adminUrl}`
    )
  })

  it("the public address in ADMIN_URL exits 1 with one line saying ADMIN_URL is not the admin address", async () => {
    const outcome = await run(["list"], { ADMIN_URL: server.baseUrl.replace(/\/v1$/, ""), ADMIN_TOKEN })
    expect(outcome.code).toBe(1)
    const lines = outcome.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^keys: no admin API at .*: is ADMIN_URL the server's admin address/)
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
