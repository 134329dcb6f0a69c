import { MAX_KEY_LIFETIME_SECONDS } from "@petstore/contract"
import { setTimeout as sleep } from "node:timers/promises"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hasValidChecksum } from "../src/auth/keyFormat.ts"
import { ADMIN_TOKEN, bearer, send } from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

describeOnEachBackend("admin API", ({ name }) => {
  let server: RunningServer
  const admin = (path: string, init: RequestInit & { body?: string } = {}, token = ADMIN_TOKEN) =>
    send(`${server.adminUrl}/admin${path}`, {
      ...init,
      headers: { ...bearer(token), ...(init.body !== undefined ? { "content-type": "application/json" } : {}) }
    })
  const createKey = (body: unknown) => admin("/keys", { method: "POST", body: JSON.stringify(body) })

  beforeAll(async () => {
    server = await startServer(name)
  })
  afterAll(() => server?.stop())

  it("answers 401 without the admin token, and with an API key in its place, with a bearer challenge", async () => {
    const without = await send(`${server.adminUrl}/admin/keys`)
    expectError(without, 401, "unauthorized")
    expect(without.headers.get("www-authenticate")).toBe(`Bearer realm="petstore-admin"`)
    const { key } = await server.createKey("free")
    for (const token of ["wrong-token-wrong-token", key]) {
      const refused = await admin("/keys", {}, token)
      expectError(refused, 401, "unauthorized")
      expect(refused.headers.get("www-authenticate")).toBe(`Bearer realm="petstore-admin", error="invalid_token"`)
    }
  })

  it("answers GET /metrics without the admin token with 401 and a bearer challenge", async () => {
    const refused = await send(`${server.adminUrl}/metrics`)
    expectError(refused, 401, "unauthorized")
    expect(refused.headers.get("www-authenticate")).toBe(`Bearer realm="petstore-admin"`)
    expect((await send(`${server.adminUrl}/metrics`, { headers: bearer(ADMIN_TOKEN) })).status).toBe(200)
  })

  it.each(["free", "pro", "business"] as const)("issues a %s key with the plan's limits", async (plan) => {
    const created = await createKey({ plan, name: `a ${plan} key` })
    expect(created.status).toBe(201)
    const limits = { free: [60, 1_000], pro: [300, 10_000], business: [1_000, 100_000] }[plan]
    expect(created.body).toEqual({
      id: expect.stringMatching(/^key_[0-9a-f]{16}$/),
      key: expect.stringMatching(/^psk_/),
      name: `a ${plan} key`,
      plan,
      limits: { perMinute: limits[0], perDay: limits[1] },
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/)
    })
  })

  it("issues an enterprise key with its own limits", async () => {
    const created = await createKey({ plan: "enterprise", limits: { perMinute: 5000, perDay: 2_000_000 } })
    expect(created.status).toBe(201)
    expect(created.body.limits).toEqual({ perMinute: 5000, perDay: 2_000_000 })
  })

  it("refuses an enterprise key without limits, and limits on another plan", async () => {
    const withoutLimits = await createKey({ plan: "enterprise" })
    expectError(withoutLimits, 400, "invalid_request")
    expect(withoutLimits.body).toMatchObject({
      message: "An enterprise key needs `limits`",
      details: [{ path: "body.limits", message: "required for the enterprise plan" }]
    })
    const limitsOnFree = await createKey({ plan: "free", limits: { perMinute: 1, perDay: 1 } })
    expectError(limitsOnFree, 400, "invalid_request")
    expect(limitsOnFree.body).toMatchObject({
      message: "The free plan has fixed limits; `limits` is only for enterprise keys",
      details: [{ path: "body.limits", message: "allowed only with the enterprise plan" }]
    })
  })

  it.each<[string, unknown]>([
    ["an unknown plan", { plan: "gold" }],
    ["no plan", { name: "x" }],
    ["an unknown field", { plan: "free", owner: "me" }],
    ["zero limits", { plan: "enterprise", limits: { perMinute: 0, perDay: 10 } }]
  ])("refuses %s with 400", async (_, body) => {
    expectError(await createKey(body), 400, "invalid_request")
  })

  it("lists live keys without their secrets", async () => {
    const created = await createKey({ plan: "pro", name: "listed" })
    const listed = await admin("/keys")
    expect(listed.status).toBe(200)
    expect(listed.body).toContainEqual(expect.objectContaining({ id: created.body.id, name: "listed", plan: "pro" }))
    expect(listed.text).not.toContain(created.body.key)
    for (const key of listed.body) {
      expect(Object.keys(key).sort()).toEqual(["createdAt", "id", "limits", "name", "plan"])
    }
  })

  it("changes a key's plan, and refuses limits on a fixed plan", async () => {
    const created = await createKey({ plan: "free" })
    const patched = await admin(`/keys/${created.body.id}`, { method: "PATCH", body: JSON.stringify({ plan: "pro" }) })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ plan: "pro", limits: { perMinute: 300, perDay: 10_000 } })
    const toEnterprise = await admin(`/keys/${created.body.id}`, {
      method: "PATCH",
      body: JSON.stringify({ plan: "enterprise", limits: { perMinute: 7, perDay: 70 } })
    })
    expect(toEnterprise.body).toMatchObject({ plan: "enterprise", limits: { perMinute: 7, perDay: 70 } })
    expectError(
      await admin(`/keys/${created.body.id}`, {
        method: "PATCH",
        body: JSON.stringify({ plan: "free", limits: { perMinute: 7, perDay: 70 } })
      }),
      400,
      "invalid_request"
    )
  })

  it("issues customer keys by default, showing no role, and staff keys with role staff", async () => {
    const customer = await createKey({ plan: "free" })
    expect(customer.body).not.toHaveProperty("role")
    const explicitCustomer = await createKey({ plan: "free", role: "customer" })
    expect(explicitCustomer.status).toBe(201)
    expect(explicitCustomer.body).not.toHaveProperty("role")
    const staff = await createKey({ plan: "pro", role: "staff" })
    expect(staff.status).toBe(201)
    expect(staff.body).toMatchObject({ plan: "pro", role: "staff" })
    const listed = await admin("/keys")
    expect(listed.body).toContainEqual(expect.objectContaining({ id: staff.body.id, role: "staff" }))
    expect(listed.body.find((key: { id: string }) => key.id === customer.body.id)).not.toHaveProperty("role")
    expectError(await createKey({ plan: "free", role: "admin" }), 400, "invalid_request")
  })

  it("changes a key's role, keeping its plan, and refuses an unknown role", async () => {
    const created = await createKey({ plan: "enterprise", limits: { perMinute: 9, perDay: 90 } })
    const promoted = await admin(`/keys/${created.body.id}`, {
      method: "PATCH",
      body: JSON.stringify({ role: "staff" })
    })
    expect(promoted.status).toBe(200)
    expect(promoted.body).toMatchObject({ plan: "enterprise", limits: { perMinute: 9, perDay: 90 }, role: "staff" })
    const replanned = await admin(`/keys/${created.body.id}`, {
      method: "PATCH",
      body: JSON.stringify({ plan: "enterprise", limits: { perMinute: 8, perDay: 80 } })
    })
    expect(replanned.body).toMatchObject({ role: "staff" })
    const demoted = await admin(`/keys/${created.body.id}`, {
      method: "PATCH",
      body: JSON.stringify({ role: "customer" })
    })
    expect(demoted.status).toBe(200)
    expect(demoted.body).not.toHaveProperty("role")
    expectError(
      await admin(`/keys/${created.body.id}`, { method: "PATCH", body: JSON.stringify({ role: "root" }) }),
      400,
      "invalid_request"
    )
  })

  it("revokes a key: 204, then gone from the list, 404 the second time, and 401 on /v1", async () => {
    const created = await createKey({ plan: "free" })
    expect((await admin(`/keys/${created.body.id}`, { method: "DELETE" })).status).toBe(204)
    expect((await admin("/keys")).body.map((key: { id: string }) => key.id)).not.toContain(created.body.id)
    expectError(await admin(`/keys/${created.body.id}`, { method: "DELETE" }), 404, "not_found")
    expectError(await send(`${server.baseUrl}/pets`, { headers: bearer(created.body.key) }), 401, "unauthorized")
  })

  it("answers 404 for an unknown key id and 400 for a malformed one", async () => {
    const unknown = await admin("/keys/key_0000000000000000", { method: "PATCH", body: "{}" })
    expectError(unknown, 404, "not_found")
    expect(unknown.body.message).toBe("No live API key has id key_0000000000000000")
    expectError(await admin("/keys/nope", { method: "DELETE" }), 400, "invalid_request")
  })

  it("answers 404 and 405 with the Error shape", async () => {
    expectError(await admin("/users"), 404, "not_found")
    const answer = await admin("/keys", { method: "PUT" })
    expectError(answer, 405, "method_not_allowed")
    expect(answer.headers.get("allow")).toBe("POST, GET, HEAD")
  })

  it.each([["GET", "/keys/"], ["DELETE", "/keys/"], ["PATCH", "/keys/"], ["GET", "/KEYS"], [
    "DELETE",
    "//keys/key_0000000000000000"
  ]])(
    "answers %s /admin%s, a path the contract does not have, with 404",
    async (method, path) => {
      expectError(await admin(path, { method, ...(method === "PATCH" ? { body: "{}" } : {}) }), 404, "not_found")
    }
  )

  describe("the life of a key", () => {
    const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1_000).toISOString()
    const pets = (key: string) => send(`${server.baseUrl}/pets`, { headers: bearer(key) })
    const patch = (id: string, body: unknown) => admin(`/keys/${id}`, { method: "PATCH", body: JSON.stringify(body) })
    const roll = (id: string, body: unknown = {}) =>
      admin(`/keys/${id}/roll`, { method: "POST", body: JSON.stringify(body) })
    /** Expiry and overlaps run on real time here: waits are generous, never asserted on. */
    const until = async (check: () => Promise<boolean>) => {
      for (let attempt = 0; attempt < 200 && !(await check()); attempt++) await sleep(100)
      return check()
    }

    it("shows expiresAt in every view, sets and clears it with PATCH, and refuses past, far and malformed times", async () => {
      const expiresAt = inSeconds(3_600)
      const created = await createKey({ plan: "free", expiresAt })
      expect(created.status).toBe(201)
      expect(created.body.expiresAt).toBe(new Date(expiresAt).toISOString())
      const listed = (await admin("/keys")).body.find((key: { id: string }) => key.id === created.body.id)
      expect(listed.expiresAt).toBe(created.body.expiresAt)
      const later = inSeconds(7_200)
      expect((await patch(created.body.id, { expiresAt: later })).body.expiresAt).toBe(new Date(later).toISOString())
      const cleared = await patch(created.body.id, { expiresAt: null })
      expect(cleared.status).toBe(200)
      expect(cleared.body).not.toHaveProperty("expiresAt")
      for (
        const [refused, why] of [
          [inSeconds(-60), "must be in the future"],
          [inSeconds(MAX_KEY_LIFETIME_SECONDS + 3_600), `at most ${MAX_KEY_LIFETIME_SECONDS / 86_400} days ahead`],
          // Not RFC 3339 timestamps: refused by the schema, in its words.
          ["tomorrow", undefined],
          ["2030-02-30", undefined],
          [`${new Date().getUTCFullYear() + 1}-02-30T00:00:00Z`, "not a valid date"],
          ["2027-01-01T24:00:00Z", "not a valid date"]
        ]
      ) {
        const body = why === undefined
          ? { details: [{ path: "body.expiresAt" }] }
          : { message: `Invalid expiresAt: ${why}`, details: [{ path: "body.expiresAt", message: why }] }
        const answer = await createKey({ plan: "free", expiresAt: refused })
        expectError(answer, 400, "invalid_request")
        expect(answer.body, refused).toMatchObject(body)
        const patched = await patch(created.body.id, { expiresAt: refused })
        expectError(patched, 400, "invalid_request")
        expect(patched.body, refused).toMatchObject(body)
      }
    })

    it("an expired key gets 401 invalid_token like an unknown one, and is listed with state=expired", async () => {
      const created = await createKey({ plan: "free", expiresAt: inSeconds(2) })
      expect((await pets(created.body.key)).status).toBe(200)
      expect(await until(async () => (await pets(created.body.key)).status === 401)).toBe(true)
      const refused = await pets(created.body.key)
      expectError(refused, 401, "unauthorized")
      expect(refused.headers.get("www-authenticate")).toContain(`error="invalid_token"`)
      const ids = (body: Array<{ id: string }>) => body.map((key) => key.id)
      expect(ids((await admin("/keys")).body)).not.toContain(created.body.id)
      expect(ids((await admin("/keys?state=expired")).body)).toContain(created.body.id)
      expectError(await admin("/keys?state=dead"), 400, "invalid_request")
      // An operator may bring it back.
      expect((await patch(created.body.id, { expiresAt: inSeconds(3_600) })).status).toBe(200)
      expect((await pets(created.body.key)).status).toBe(200)
    })

    it("rolls a key: a new secret for the same key, the old one working for the overlap, then 401", async () => {
      const created = await createKey({ plan: "business", role: "staff", name: "rolled" })
      const rolled = await roll(created.body.id, { overlapSeconds: 2 })
      expect(rolled.status).toBe(200)
      expect(rolled.body).toMatchObject({ id: created.body.id, plan: "business", role: "staff", name: "rolled" })
      expect(rolled.body.key).toMatch(/^psk_[0-9A-Za-z]{49}$/)
      expect(rolled.body.key).not.toBe(created.body.key)
      expect(rolled.body.previousKeyExpiresAt).toMatch(/^\d{4}-/)
      expect((await pets(rolled.body.key)).status).toBe(200)
      expect(await until(async () => (await pets(created.body.key)).status === 401)).toBe(true)
      expect((await pets(rolled.body.key)).status).toBe(200)
      const limits = await send(`${server.baseUrl}/rate_limit`, { headers: bearer(rolled.body.key) })
      expect(limits.body.plan).toBe("business")
    })

    it("rolling again ends the older overlap at once; overlap 0 cuts over now; bad overlaps are 400, unknown keys 404", async () => {
      const created = await createKey({ plan: "free" })
      const first = await roll(created.body.id)
      expect(new Date(first.body.previousKeyExpiresAt).getTime()).toBeGreaterThan(Date.now() + 86_000_000)
      expect((await pets(created.body.key)).status).toBe(200)
      const second = await roll(created.body.id, { overlapSeconds: 3_600 })
      expectError(await pets(created.body.key), 401, "unauthorized")
      expect((await pets(first.body.key)).status).toBe(200)
      const third = await roll(created.body.id, { overlapSeconds: 0 })
      expect(third.body).not.toHaveProperty("previousKeyExpiresAt")
      expectError(await pets(second.body.key), 401, "unauthorized")
      expect((await pets(third.body.key)).status).toBe(200)
      for (const overlapSeconds of [-1, 604_801, 1.5, "60"]) {
        expectError(await roll(created.body.id, { overlapSeconds }), 400, "invalid_request")
      }
      expectError(await roll("key_0000000000000000"), 404, "not_found")
    })

    it("issues keys with a checksum a scanner can verify", async () => {
      const { body } = await createKey({ plan: "free" })
      expect(body.key).toMatch(/^psk_[0-9A-Za-z]{49}$/)
      expect(hasValidChecksum(body.key)).toBe(true)
      const tampered = body.key.slice(0, 10) + (body.key[10] === "a" ? "b" : "a") + body.key.slice(11)
      expectError(await pets(tampered), 401, "unauthorized")
    })

    it("shows lastUsedAt once a key is used, and not before", async () => {
      const created = await createKey({ plan: "free" })
      const view = async () => (await admin("/keys")).body.find((key: { id: string }) => key.id === created.body.id)
      expect(await view()).not.toHaveProperty("lastUsedAt")
      const before = Date.now()
      await pets(created.body.key)
      const lastUsedAt = new Date((await view()).lastUsedAt).getTime()
      expect(lastUsedAt).toBeGreaterThanOrEqual(before - 1_000)
      expect(lastUsedAt).toBeLessThanOrEqual(Date.now())
    })

    it("records every admin change in the audit trail, newest first, with the caller's address and no secret", async () => {
      const created = await createKey({ plan: "free", name: "audited" })
      const id = created.body.id
      await patch(id, { plan: "pro" })
      const rolled = await roll(id, { overlapSeconds: 60 })
      await admin(`/keys/${id}/unban`, { method: "POST" })
      await admin(`/keys/${id}`, { method: "DELETE" })
      const trail = await admin(`/audit?keyId=${id}`)
      expect(trail.status).toBe(200)
      expect(trail.body.map((entry: { action: string }) => entry.action)).toEqual([
        "key.revoked",
        "key.unbanned",
        "key.rolled",
        "key.updated",
        "key.created"
      ])
      for (const entry of trail.body) {
        expect(entry).toMatchObject({ keyId: id, clientAddress: "127.0.0.1", occurredAt: expect.stringMatching(/Z$/) })
      }
      expect(trail.body[3].changes).toEqual({
        plan: { from: "free", to: "pro" },
        limits: { from: { perMinute: 60, perDay: 1_000 }, to: { perMinute: 300, perDay: 10_000 } }
      })
      expect(trail.body[4].changes).toMatchObject({ plan: "free", name: "audited", role: "customer" })
      expect(trail.body[2].changes).toMatchObject({ overlapSeconds: 60 })
      expect(trail.text).not.toContain(created.body.key)
      expect(trail.text).not.toContain(rolled.body.key)
      const rolls = await admin(`/audit?keyId=${id}&action=key.rolled`)
      expect(rolls.body).toHaveLength(1)
    })

    it("pages the audit trail through Link, and refuses a bad cursor, action or key id", async () => {
      const created = await createKey({ plan: "free" })
      for (const plan of ["pro", "business", "free"]) await patch(created.body.id, { plan })
      const seen: Array<string> = []
      let path: string | undefined = `/audit?keyId=${created.body.id}&limit=2`
      while (path !== undefined) {
        const page = await admin(path)
        expect(page.status).toBe(200)
        seen.push(...page.body.map((entry: { id: string }) => entry.id))
        const next = /^<\/admin([^>]+)>; rel="next"$/.exec(page.headers.get("link") ?? "")
        path = next?.[1]
      }
      expect(seen).toHaveLength(4)
      expect([...seen].sort((a, b) => Number(b) - Number(a))).toEqual(seen)
      expectError(await admin("/audit?cursor=nope"), 400, "invalid_request")
      expectError(await admin("/audit?action=key.exploded"), 400, "invalid_request")
      expectError(await admin("/audit?keyId=nope"), 400, "invalid_request")
    })

    it("does not record a change that failed", async () => {
      const created = await createKey({ plan: "free" })
      expectError(await patch(created.body.id, { limits: { perMinute: 1, perDay: 1 } }), 400, "invalid_request")
      const trail = await admin(`/audit?keyId=${created.body.id}`)
      expect(trail.body.map((entry: { action: string }) => entry.action)).toEqual(["key.created"])
    })
  })
})
