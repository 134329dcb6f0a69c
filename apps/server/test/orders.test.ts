import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, type Answer, bearer, json, send } from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

/** Every rate-limit header an operation's answer carries (README "Quotas"). */
const expectRateLimitHeaders = (answer: Answer) => {
  for (
    const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit"]
  ) {
    expect(answer.headers.get(name), name).not.toBeNull()
  }
}

describeOnEachBackend("orders and pet changes (beta)", ({ name }) => {
  let server: RunningServer
  let customer: string
  let otherCustomer: string
  let staff: string
  const url = (path: string) => `${server.baseUrl}${path}`
  const call = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    send(url(path), {
      method,
      headers: { ...(body === undefined ? bearer(key) : json(key)), ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
    })
  const newPet = async (status = "available") => {
    const created = await call(customer, "POST", "/pets", { name: "Orderable", categoryId: 1, status })
    expect(created.status).toBe(201)
    return created
  }
  const petOf = async (id: number) => (await call(customer, "GET", `/pets/${id}`)).body
  const place = (key: string, petId: unknown, headers: Record<string, string> = {}) =>
    call(key, "POST", "/store/orders", { petId }, headers)
  const staffKey = async () => {
    const answer = await send(`${server.adminUrl}/admin/keys`, {
      method: "POST",
      headers: { ...bearer(ADMIN_TOKEN), "content-type": "application/json" },
      body: JSON.stringify({ plan: "business", role: "staff" })
    })
    return answer.body.key as string
  }

  beforeAll(async () => {
    server = await startServer(name)
    customer = (await server.createKey("business")).key
    otherCustomer = (await server.createKey("business")).key
    staff = await staffKey()
  })
  afterAll(() => server?.stop())

  describe("ETag and If-Match", () => {
    it("createPet, getPet and PATCH answer the pet's ETag, which changes when the pet does", async () => {
      const created = await newPet()
      const etag = created.headers.get("etag")
      expect(etag).toBe(`"${created.body.id}.1"`)
      expect((await call(customer, "GET", `/pets/${created.body.id}`)).headers.get("etag")).toBe(etag)
      const patched = await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "Renamed" })
      expect(patched.headers.get("etag")).toBe(`"${created.body.id}.2"`)
    })

    it("PATCH and DELETE with a stale If-Match are 412 precondition_failed and change nothing", async () => {
      const created = await newPet()
      const stale = created.headers.get("etag")!
      await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "Moved on" })
      expectError(
        await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "Lost update" }, { "if-match": stale }),
        412,
        "precondition_failed"
      )
      expectError(
        await call(staff, "DELETE", `/pets/${created.body.id}`, undefined, { "if-match": stale }),
        412,
        "precondition_failed"
      )
      expect((await petOf(created.body.id)).name).toBe("Moved on")
    })

    it("PATCH and DELETE with the current If-Match (or *, or a list holding it) succeed", async () => {
      const created = await newPet()
      const current = created.headers.get("etag")!
      const patched = await call(customer, "PATCH", `/pets/${created.body.id}`, { categoryId: 9 }, {
        "if-match": `"1.99", ${current}`
      })
      expect(patched.status).toBe(200)
      expect((await call(customer, "PATCH", `/pets/${created.body.id}`, { categoryId: 8 }, { "if-match": "*" })).status)
        .toBe(200)
      const deleted = await call(staff, "DELETE", `/pets/${created.body.id}`, undefined, {
        "if-match": `"${created.body.id}.3"`
      })
      expect(deleted.status).toBe(204)
    })

    it("compares strongly: a weak tag never matches (412); another pet's tag never matches", async () => {
      const created = await newPet()
      const other = await newPet()
      expectError(
        await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "W" }, {
          "if-match": `W/${created.headers.get("etag")}`
        }),
        412,
        "precondition_failed"
      )
      expectError(
        await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "W" }, {
          "if-match": other.headers.get("etag")!
        }),
        412,
        "precondition_failed"
      )
    })

    it("answers an If-Match that is no entity tag at all with 412, as one that names no current version", async () => {
      const created = await newPet()
      expectError(
        await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "X" }, { "if-match": "not-a-tag" }),
        412,
        "precondition_failed"
      )
      expect((await petOf(created.body.id)).name).toBe("Orderable")
    })

    it("answers 404 for an unknown pet before looking at If-Match", async () => {
      expectError(
        await call(customer, "PATCH", "/pets/999999999", { name: "X" }, { "if-match": "\"999999999.1\"" }),
        404,
        "not_found"
      )
    })
  })

  describe("PATCH /v1/pets/{petId}", () => {
    it("changes name and categoryId, validated as on create, and answers 200 with the Pet", async () => {
      const created = await newPet()
      const answer = await call(customer, "PATCH", `/pets/${created.body.id}`, { name: "  Trimmed  ", categoryId: 4 })
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ id: created.body.id, name: "Trimmed", categoryId: 4, status: "available" })
      expect(await petOf(created.body.id)).toEqual(answer.body)
    })

    it("an empty patch changes nothing and keeps the ETag", async () => {
      const created = await newPet()
      const answer = await call(customer, "PATCH", `/pets/${created.body.id}`, {})
      expect(answer.status).toBe(200)
      expect(answer.headers.get("etag")).toBe(created.headers.get("etag"))
    })

    it.each<[string, unknown, string]>([
      ["an empty name", { name: "" }, "body.name"],
      ["a name over 100 characters", { name: "x".repeat(101) }, "body.name"],
      ["a categoryId of 0", { categoryId: 0 }, "body.categoryId"],
      ["a categoryId given as a string", { categoryId: "2" }, "body.categoryId"],
      ["an unknown field", { colour: "brown" }, "body.colour"]
    ])("refuses %s with 400 naming the field", async (_, body, path) => {
      const created = await newPet()
      const answer = await call(customer, "PATCH", `/pets/${created.body.id}`, body)
      expectError(answer, 400, "invalid_request")
      expect(answer.body.details.map((detail: { path: string }) => detail.path)).toContain(path)
    })

    it("refuses a status with 400 saying that status changes through orders", async () => {
      const created = await newPet()
      const answer = await call(customer, "PATCH", `/pets/${created.body.id}`, { status: "sold" })
      expectError(answer, 400, "invalid_request")
      const detail = answer.body.details.find((detail: { path: string }) => detail.path === "body.status")
      expect(detail.message).toMatch(/status changes only through orders/)
      expect((await petOf(created.body.id)).status).toBe("available")
    })

    it("answers 404 for an unknown pet and 415 for a body that is not JSON", async () => {
      const missing = await call(customer, "PATCH", "/pets/987654321", { name: "Ghost" })
      expectError(missing, 404, "not_found")
      expect(missing.body.message).toBe("No pet has id 987654321")
      expectError(
        await send(url("/pets/1"), {
          method: "PATCH",
          headers: { ...bearer(customer), "content-type": "text/plain" },
          body: "{}"
        }),
        415,
        "unsupported_media_type"
      )
    })
  })

  describe("DELETE /v1/pets/{petId}", () => {
    it("needs a staff key: a customer gets 403 forbidden and the pet stays", async () => {
      const created = await newPet()
      expectError(await call(customer, "DELETE", `/pets/${created.body.id}`), 403, "forbidden")
      expect((await call(customer, "GET", `/pets/${created.body.id}`)).status).toBe(200)
    })

    it("deletes: 204 with no body, then 404 for the pet and for a second delete", async () => {
      const created = await newPet()
      const answer = await call(staff, "DELETE", `/pets/${created.body.id}`)
      expect(answer.status).toBe(204)
      expect(answer.text).toBe("")
      const read = await call(customer, "GET", `/pets/${created.body.id}`)
      expectError(read, 404, "not_found")
      expect(read.body.message).toBe(`No pet has id ${created.body.id}`)
      const deletedAgain = await call(staff, "DELETE", `/pets/${created.body.id}`)
      expectError(deletedAgain, 404, "not_found")
      expect(deletedAgain.body.message).toBe(`No pet has id ${created.body.id}`)
    })

    it("is 409 pet_has_open_order while an order is open, and succeeds once it is cancelled; closed orders keep the petId", async () => {
      const created = await newPet()
      const order = await place(customer, created.body.id)
      expectError(await call(staff, "DELETE", `/pets/${created.body.id}`), 409, "pet_has_open_order")
      expect((await call(customer, "POST", `/store/orders/${order.body.id}/cancel`)).status).toBe(200)
      expect((await call(staff, "DELETE", `/pets/${created.body.id}`)).status).toBe(204)
      expect((await call(customer, "GET", `/store/orders/${order.body.id}`)).body).toMatchObject({
        petId: created.body.id,
        status: "cancelled"
      })
    })

    it("a deleted pet's Idempotency-Key creates the pet anew on retry, rather than waiting on a pet that is gone", async () => {
      const headers = { "idempotency-key": `delete-${name}-${Date.now()}` }
      const first = await call(customer, "POST", "/pets", { name: "Once", categoryId: 1 }, headers)
      expect((await call(staff, "DELETE", `/pets/${first.body.id}`)).status).toBe(204)
      const retry = await call(customer, "POST", "/pets", { name: "Once", categoryId: 1 }, headers)
      expect(retry.status).toBe(201)
      expect(retry.body.id).not.toBe(first.body.id)
    })
  })

  describe("POST /v1/store/orders", () => {
    it("places an order: 201, the Order, Location, and the pet is pending", async () => {
      const pet = await newPet()
      const answer = await place(customer, pet.body.id)
      expect(answer.status).toBe(201)
      expect(answer.body).toEqual({
        id: expect.any(Number),
        petId: pet.body.id,
        status: "placed",
        placedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: answer.body.placedAt
      })
      expect(answer.headers.get("location")).toBe(`/v1/store/orders/${answer.body.id}`)
      const fetched = await call(customer, "GET", `/pets/${pet.body.id}`)
      expect(fetched.body.status).toBe("pending")
      expect(fetched.headers.get("etag")).not.toBe(pet.headers.get("etag"))
    })

    it.each(["pending", "sold"])("refuses a %s pet with 409 pet_not_available, naming its status", async (status) => {
      const pet = await newPet(status)
      const answer = await place(customer, pet.body.id)
      expectError(answer, 409, "pet_not_available")
      expect(answer.body.message).toContain(status)
    })

    it("refuses an ordered pet with 409, and an unknown pet with 404", async () => {
      const pet = await newPet()
      expect((await place(customer, pet.body.id)).status).toBe(201)
      expectError(await place(otherCustomer, pet.body.id), 409, "pet_not_available")
      const unknown = await place(customer, 987654321)
      expectError(unknown, 404, "not_found")
      expect(unknown.body.message).toBe("No pet has id 987654321")
    })

    it.each<[string, unknown, string]>([
      ["a petId given as a string", { petId: "1" }, "body.petId"],
      ["a petId of 0", { petId: 0 }, "body.petId"],
      ["no petId", {}, "body.petId"],
      ["an unknown field", { petId: 1, quantity: 2 }, "body.quantity"]
    ])("refuses %s with 400 naming the field", async (_, body, path) => {
      const answer = await call(customer, "POST", "/store/orders", body)
      expectError(answer, 400, "invalid_request")
      expect(answer.body.details.map((detail: { path: string }) => detail.path)).toContain(path)
    })

    it("of concurrent orders for one pet from several keys, exactly one is 201 and every other 409", async () => {
      const pet = await newPet()
      const keys = [customer, otherCustomer, staff]
      const answers = await Promise.all(
        Array.from({ length: 24 }, (_, i) => place(keys[i % keys.length]!, pet.body.id))
      )
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
      for (const answer of answers.filter((answer) => answer.status !== 201)) {
        expectError(answer, 409, "pet_not_available")
      }
    })

    describe("with Idempotency-Key", () => {
      it("a retry returns the original order, marked as a replay, and places nothing more", async () => {
        const pet = await newPet()
        const headers = { "idempotency-key": `order-${name}-${Date.now()}` }
        const first = await place(customer, pet.body.id, headers)
        const retry = await place(customer, pet.body.id, headers)
        expect(first.status).toBe(201)
        expect(retry.status).toBe(201)
        expect(retry.body).toEqual(first.body)
        expect(retry.headers.get("location")).toBe(first.headers.get("location"))
        expect(retry.headers.get("idempotent-replayed")).toBe("true")
        expect(first.headers.get("idempotent-replayed")).toBeNull()
      })

      it("the same key with another pet is 422 idempotency_key_reused; so is a key first used to create a pet", async () => {
        const [a, b] = [await newPet(), await newPet()]
        const headers = { "idempotency-key": `order-mismatch-${name}-${Date.now()}` }
        expect((await place(customer, a.body.id, headers)).status).toBe(201)
        expectError(await place(customer, b.body.id, headers), 422, "idempotency_key_reused")
        const petKey = { "idempotency-key": `pet-then-order-${name}-${Date.now()}` }
        expect((await call(customer, "POST", "/pets", { name: "Keyed", categoryId: 1 }, petKey)).status).toBe(201)
        expectError(await place(customer, b.body.id, petKey), 422, "idempotency_key_reused")
      })

      it("a refused placement is not stored: once the pet is available, a retry with the key places the order", async () => {
        const pet = await newPet()
        const blocking = await place(otherCustomer, pet.body.id)
        const headers = { "idempotency-key": `order-refused-${name}-${Date.now()}` }
        expectError(await place(customer, pet.body.id, headers), 409, "pet_not_available")
        await call(otherCustomer, "POST", `/store/orders/${blocking.body.id}/cancel`)
        const retry = await place(customer, pet.body.id, headers)
        expect(retry.status).toBe(201)
        expect(retry.headers.get("idempotent-replayed")).toBeNull()
      })

      it("of concurrent placements with one key, one places the order and none places another", async () => {
        const pet = await newPet()
        const headers = { "idempotency-key": `order-race-${name}-${Date.now()}` }
        const answers = await Promise.all(Array.from({ length: 8 }, () => place(customer, pet.body.id, headers)))
        const placed = answers.filter((answer) => answer.status === 201)
        expect(placed.length).toBeGreaterThanOrEqual(1)
        expect(new Set(placed.map((answer) => answer.body.id)).size).toBe(1)
        for (const answer of answers.filter((answer) => answer.status !== 201)) {
          expectError(answer, 409, "idempotency_key_in_flight")
        }
      })
    })
  })

  describe("reading orders", () => {
    it("GET an order: the owner and staff get it; another customer gets 404, never 403", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      expect((await call(customer, "GET", `/store/orders/${order.body.id}`)).body).toEqual(order.body)
      expect((await call(staff, "GET", `/store/orders/${order.body.id}`)).body).toEqual(order.body)
      expectError(await call(otherCustomer, "GET", `/store/orders/${order.body.id}`), 404, "not_found")
      expectError(await call(customer, "GET", "/store/orders/987654321"), 404, "not_found")
      expectError(await call(customer, "GET", "/store/orders/0"), 400, "invalid_request")
    })

    it("GET /store/orders lists the caller's own orders, a staff key's every order, as a bare array in id order", async () => {
      const lister = (await server.createKey("business")).key
      const mine = [await place(lister, (await newPet()).body.id), await place(lister, (await newPet()).body.id)]
      const theirs = await place(otherCustomer, (await newPet()).body.id)
      const own = await call(lister, "GET", "/store/orders")
      expect(own.status).toBe(200)
      expect(own.body).toEqual(mine.map((answer) => answer.body))
      const every = await call(staff, "GET", "/store/orders?limit=100")
      const ids = every.body.map((order: { id: number }) => order.id)
      expect(ids).toEqual(expect.arrayContaining([...mine, theirs].map((answer) => answer.body.id)))
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
    })

    it("filters by status, and pages with limit and Link like listPets", async () => {
      const lister = (await server.createKey("business")).key
      const placed = []
      for (let i = 0; i < 5; i++) placed.push((await place(lister, (await newPet()).body.id)).body)
      await call(lister, "POST", `/store/orders/${placed[1].id}/cancel`)
      const cancelled = await call(lister, "GET", "/store/orders?status=cancelled")
      expect(cancelled.body.map((order: { id: number }) => order.id)).toEqual([placed[1].id])
      const seen: Array<number> = []
      let next: string | null = url("/store/orders?limit=2")
      while (next !== null) {
        const page: Answer = await send(next, { headers: bearer(lister) })
        expect(page.status).toBe(200)
        expect(page.body.length).toBeLessThanOrEqual(2)
        seen.push(...page.body.map((order: { id: number }) => order.id))
        const link = page.headers.get("link")
        next = link === null ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!
        if (next !== null) expect(next).toContain("/v1/store/orders?limit=2&cursor=")
      }
      expect(seen).toEqual(placed.map((order) => order.id))
    })

    it.each(["?limit=0", "?limit=101", "?status=open", "?cursor=bogus"])("refuses %s with 400", async (query) => {
      expectError(await call(customer, "GET", `/store/orders${query}`), 400, "invalid_request")
    })
  })

  describe("cancel and deliver", () => {
    it("cancel moves a placed order to cancelled and its pet back to available; then 409 invalid_transition naming cancelled", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      const cancelled = await call(customer, "POST", `/store/orders/${order.body.id}/cancel`)
      expect(cancelled.status).toBe(200)
      expect(cancelled.body).toMatchObject({
        id: order.body.id,
        petId: pet.body.id,
        status: "cancelled",
        placedAt: order.body.placedAt
      })
      expect((await petOf(pet.body.id)).status).toBe("available")
      const again = await call(customer, "POST", `/store/orders/${order.body.id}/cancel`)
      expectError(again, 409, "invalid_transition")
      expect(again.body.message).toContain("cancelled")
      expectError(await call(staff, "POST", `/store/orders/${order.body.id}/deliver`), 409, "invalid_transition")
    })

    it("deliver needs a staff key (403 forbidden otherwise) and moves the order to delivered, the pet to sold", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      expectError(await call(customer, "POST", `/store/orders/${order.body.id}/deliver`), 403, "forbidden")
      expect((await petOf(pet.body.id)).status).toBe("pending")
      const delivered = await call(staff, "POST", `/store/orders/${order.body.id}/deliver`)
      expect(delivered.status).toBe(200)
      expect(delivered.body.status).toBe("delivered")
      expect((await petOf(pet.body.id)).status).toBe("sold")
      const cancel = await call(customer, "POST", `/store/orders/${order.body.id}/cancel`)
      expectError(cancel, 409, "invalid_transition")
      expect(cancel.body.message).toContain("delivered")
    })

    it("staff may cancel any order; another customer's cancel is 404 and moves nothing", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      expectError(await call(otherCustomer, "POST", `/store/orders/${order.body.id}/cancel`), 404, "not_found")
      expect((await petOf(pet.body.id)).status).toBe("pending")
      expect((await call(staff, "POST", `/store/orders/${order.body.id}/cancel`)).body.status).toBe("cancelled")
    })

    it("of a concurrent cancel and deliver of one order exactly one succeeds, and the pet follows it", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      const [cancel, deliver] = await Promise.all([
        call(customer, "POST", `/store/orders/${order.body.id}/cancel`),
        call(staff, "POST", `/store/orders/${order.body.id}/deliver`)
      ])
      expect([cancel.status, deliver.status].sort()).toEqual([200, 409])
      expect((await petOf(pet.body.id)).status).toBe(cancel.status === 200 ? "available" : "sold")
    })

    it("answers 404 for an unknown order", async () => {
      expectError(await call(customer, "POST", "/store/orders/987654321/cancel"), 404, "not_found")
      expectError(await call(staff, "POST", "/store/orders/987654321/deliver"), 404, "not_found")
    })
  })

  describe("stability and quotas", () => {
    it("every answer of a beta operation carries Stability: beta, errors included; stable operations' do not", async () => {
      const pet = await newPet()
      const order = await place(customer, pet.body.id)
      const beta: Array<Answer> = [
        order,
        await call(customer, "GET", "/store/orders"),
        await call(customer, "GET", `/store/orders/${order.body.id}`),
        await call(customer, "GET", "/store/orders/987654321"),
        await call(customer, "POST", `/store/orders/${order.body.id}/deliver`),
        await call(customer, "PATCH", `/pets/${pet.body.id}`, { name: "Beta" }),
        await call(customer, "DELETE", `/pets/${pet.body.id}`),
        await send(url("/store/orders"), {}),
        await call(customer, "GET", "/store/orders?limit=0")
      ]
      for (const answer of beta) expect(answer.headers.get("stability"), String(answer.status)).toBe("beta")
      const stable = [
        pet,
        await call(customer, "GET", "/pets"),
        await call(customer, "GET", `/pets/${pet.body.id}`),
        await call(customer, "GET", "/rate_limit")
      ]
      for (const answer of stable) expect(answer.headers.get("stability")).toBeNull()
    })

    it("every new operation spends quota and carries every rate-limit header", async () => {
      const key = (await server.createKey("enterprise", { perMinute: 1000, perDay: 100_000 })).key
      const pet = (await call(key, "POST", "/pets", { name: "Quota", categoryId: 1 })).body
      const answers: Array<Answer> = []
      const order = await place(key, pet.id)
      answers.push(order)
      answers.push(await call(key, "GET", "/store/orders"))
      answers.push(await call(key, "GET", `/store/orders/${order.body.id}`))
      answers.push(await call(key, "POST", `/store/orders/${order.body.id}/deliver`))
      answers.push(await call(key, "POST", `/store/orders/${order.body.id}/cancel`))
      answers.push(await call(key, "PATCH", `/pets/${pet.id}`, { name: "Quota 2" }))
      answers.push(await call(key, "DELETE", `/pets/${pet.id}`))
      const remaining = answers.map((answer) => Number(answer.headers.get("x-ratelimit-remaining")))
      for (const answer of answers) expectRateLimitHeaders(answer)
      // One request before (the create): each of these spent exactly one.
      expect(remaining).toEqual([998, 997, 996, 995, 994, 993, 992])
    })

    it("answers 401 without a key, with the Error shape", async () => {
      expectError(
        await send(url("/store/orders"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{\"petId\":1}"
        }),
        401,
        "unauthorized"
      )
    })
  })
})
