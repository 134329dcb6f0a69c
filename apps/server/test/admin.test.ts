import { afterAll, beforeAll, expect, it } from "vitest"
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
    expect(withoutLimits.body.details[0].path).toBe("body.limits")
    expectError(await createKey({ plan: "free", limits: { perMinute: 1, perDay: 1 } }), 400, "invalid_request")
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
    expectError(await admin("/keys/key_0000000000000000", { method: "PATCH", body: "{}" }), 404, "not_found")
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
})
