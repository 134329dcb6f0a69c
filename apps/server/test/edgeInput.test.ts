/**
 * Regression tests of issue 20's findings at the edge (items 4–9): each reproduction of the security
 * review answers the documented 4xx, never a 500, on PGlite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN_TOKEN, bearer, json, send } from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError, sendRaw } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

describeOnEachBackend("edge input", ({ name }) => {
  let server: RunningServer
  let customer: string
  let staff: string
  const origin = () => new URL(server.baseUrl).origin
  const url = (path: string) => `${server.baseUrl}${path}`
  const admin = (path: string, method = "GET", body?: unknown) =>
    send(`${server.adminUrl}/admin${path}`, {
      method,
      headers: { ...bearer(ADMIN_TOKEN), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {})
    })
  const createPet = (body: unknown) =>
    send(url("/pets"), { method: "POST", headers: json(customer), body: JSON.stringify(body) })
  const detailPaths = (answer: { body: { details: Array<{ path: string }> } }) =>
    answer.body.details.map((detail) => detail.path)

  beforeAll(async () => {
    server = await startServer(name)
    customer = (await server.createKey("business")).key
    staff = (await admin("/keys", "POST", { plan: "business", role: "staff" })).body.key
  })
  afterAll(() => server?.stop())

  describe("numbers beyond the column's range (item 4)", () => {
    it("If-Match naming a version beyond the integer column is 412 on PATCH and DELETE, never 500", async () => {
      const pet = (await createPet({ name: "Range", categoryId: 1 })).body
      for (const version of ["2147483648", "9999999999999999"]) {
        const tag = `"${pet.id}.${version}"`
        const patched = await send(url(`/pets/${pet.id}`), {
          method: "PATCH",
          headers: { ...json(customer), "if-match": tag },
          body: JSON.stringify({ name: "Changed" })
        })
        expectError(patched, 412, "precondition_failed")
        expectError(
          await send(url(`/pets/${pet.id}`), { method: "DELETE", headers: { ...bearer(staff), "if-match": tag } }),
          412,
          "precondition_failed"
        )
      }
      const unchanged = await send(url(`/pets/${pet.id}`), { headers: bearer(customer) })
      expect(unchanged.body.name).toBe("Range")
    })

    it("an id in a path beyond 2^53 − 1 is 400 naming the parameter, not another pet's row", async () => {
      for (const id of ["9007199254740993", "9999999999999999"]) {
        const answer = await send(url(`/pets/${id}`), {
          method: "PATCH",
          headers: json(customer),
          body: JSON.stringify({ name: "x" })
        })
        expectError(answer, 400, "invalid_request")
        expect(detailPaths(answer)).toContain("path.petId")
        const order = await send(url(`/store/orders/${id}`), { headers: bearer(customer) })
        expectError(order, 400, "invalid_request")
        expect(detailPaths(order)).toContain("path.orderId")
      }
    })

    it("admin limits beyond the integer column are 400 with details, on create and on update", async () => {
      for (const limits of [{ perMinute: 2147483648, perDay: 5 }, { perMinute: 5, perDay: 1e300 }]) {
        const created = await admin("/keys", "POST", { plan: "enterprise", limits })
        expectError(created, 400, "invalid_request")
        expect(detailPaths(created).some((path) => path.startsWith("body.limits"))).toBe(true)
      }
      const key = (await admin("/keys", "POST", { plan: "enterprise", limits: { perMinute: 5, perDay: 5 } })).body
      const updated = await admin(`/keys/${key.id}`, "PATCH", { limits: { perMinute: 2147483648, perDay: 5 } })
      expectError(updated, 400, "invalid_request")
      const largest = await admin(`/keys/${key.id}`, "PATCH", { limits: { perMinute: 2147483647, perDay: 2147483647 } })
      expect(largest.status).toBe(200)
    })
  })

  describe("the request target and Host (items 5–7)", () => {
    it("an absolute-form request line with a bad authority is 400, on both listeners", async () => {
      for (const base of [origin(), server.adminUrl]) {
        for (const target of ["http://a:99999/nothing", "http://[::1/v1/pets", "http://a%zz/v1/pets"]) {
          const answer = await sendRaw(base, { method: "GET", path: target })
          expectError(answer, 400, "invalid_request")
          expect(detailPaths(answer)).toEqual(["target"])
        }
      }
      // A valid absolute-form target is its path, as RFC 9112 asks of servers.
      expect((await sendRaw(origin(), { method: "GET", path: `http://example.com/healthz` })).status).toBe(200)
    })

    it("a HEAD that Node's parser refuses is answered 400 without a body, so the client can read it (found by the edge fuzzer)", async () => {
      const answer = await sendRaw(origin(), { method: "HEAD", path: "/v1/pets/\u00d1" })
      expect(answer.status).toBe(400)
      expect(answer.text).toBe("")
    })

    it("a path such as //a:99999/x is an unknown path, not a 500", async () => {
      expectError(await sendRaw(origin(), { method: "GET", path: "//a:99999/x" }), 404, "not_found")
    })

    it("a Host that is no host[:port] is 400 and never reaches Link", async () => {
      for (const host of ["x>; rel=\"next\", <https://evil.example/steal", "a b", "x:99999", "x:port", "a,b"]) {
        const answer = await sendRaw(origin(), {
          method: "GET",
          path: "/v1/pets?limit=1",
          headers: { ...bearer(customer), host }
        })
        expectError(answer, 400, "invalid_request")
        expect(detailPaths(answer)).toEqual(["header.host"])
        expect(answer.headers.get("link")).toBeNull()
        // Refused before any route, it still carries what the document promises on every answer.
        expect(answer.headers.get("cache-control")).toBe("no-store")
        expect(answer.headers.get("x-content-type-options")).toBe("nosniff")
        expect(answer.headers.get("x-request-id")).not.toBeNull()
      }
      await createPet({ name: "One", categoryId: 1 })
      await createPet({ name: "Two", categoryId: 1 })
      for (const host of ["api.example.com", "api.example.com:8443", "127.0.0.1:9", "[::1]:8080", "pet_store"]) {
        const answer = await sendRaw(origin(), {
          method: "GET",
          path: "/v1/pets?limit=1",
          headers: { ...bearer(customer), host }
        })
        expect(answer.status).toBe(200)
        expect(answer.headers.get("link")).toMatch(
          new RegExp(
            `^<http://${host.replace(/[.[\]]/g, "\\$&")}/v1/pets\\?limit=1&cursor=[A-Za-z0-9_-]+>; rel="next"$`
          )
        )
      }
    })

    it("a ; or # in a path makes it an unknown path on both listeners, and changes nothing", async () => {
      const pet = (await createPet({ name: "Semicolon", categoryId: 1 })).body
      const patched = await sendRaw(origin(), {
        method: "PATCH",
        path: `/v1/pets/${pet.id};admin`,
        headers: { ...json(customer) },
        body: JSON.stringify({ name: "Changed" })
      })
      expectError(patched, 404, "not_found")
      for (
        const path of [`/v1/pets;x`, `/v1/pets/${pet.id}#x`, "/healthz;x", "/docs;x", "/v1/openapi.json;x", "/readyz#x"]
      ) {
        expectError(await sendRaw(origin(), { method: "GET", path, headers: bearer(customer) }), 404, "not_found")
      }
      for (const path of ["/admin/keys;x", "/metrics;x", "/admin/keys#x"]) {
        expectError(
          await sendRaw(server.adminUrl, { method: "GET", path, headers: bearer(ADMIN_TOKEN) }),
          404,
          "not_found"
        )
      }
      expect((await send(url(`/pets/${pet.id}`), { headers: bearer(customer) })).body.name).toBe("Semicolon")
      // Encoded, the same characters are part of the parameter, and validated as such.
      expectError(await send(url(`/pets/${pet.id}%3Badmin`), { headers: bearer(customer) }), 400, "invalid_request")
    })
  })

  describe("admin input (item 8) and names (item 9)", () => {
    it("a NUL or a control character in a key's name is 400 with details", async () => {
      for (const name of ["a\u0000b", "a\u0007b", "line\nbreak", "\u202Egnp.exe"]) {
        const answer = await admin("/keys", "POST", { plan: "free", name })
        expectError(answer, 400, "invalid_request")
        expect(detailPaths(answer)).toEqual(["body.name"])
      }
    })

    it.each<[string, string]>([
      ["only a zero-width space", "\u200B"],
      ["a right-to-left override", "Rex\u202Egnp"],
      ["a zero-width space inside", "R\u200Bex"],
      ["a NUL", "Re\u0000x"],
      ["a control character", "Re\u001Bx"],
      ["a tab inside", "Re\tx"],
      ["a line separator inside", "Re\u2028x"],
      ["only a Hangul filler", "\u3164"],
      ["only blank Braille", "\u2800\u2800"],
      ["a byte order mark inside", "Re\uFEFFx"]
    ])("refuses a pet name with %s, on create and on PATCH", async (_, name) => {
      const created = await createPet({ name, categoryId: 1 })
      expectError(created, 400, "invalid_request")
      expect(detailPaths(created)).toEqual(["body.name"])
      const pet = (await createPet({ name: "Plain", categoryId: 1 })).body
      const patched = await send(url(`/pets/${pet.id}`), {
        method: "PATCH",
        headers: json(customer),
        body: JSON.stringify({ name })
      })
      expectError(patched, 400, "invalid_request")
      expect(detailPaths(patched)).toEqual(["body.name"])
    })

    it("stores a name trimmed and in NFC, and keeps what people write: accents, scripts, emoji", async () => {
      const decomposed = await createPet({ name: "  Re\u0301my  ", categoryId: 1 })
      expect(decomposed.status).toBe(201)
      expect(decomposed.body.name).toBe("R\u00e9my")
      for (const name of ["Ŝarik", "Бобик", "ポチ", "مشمش", "🐕 Rex", "Mr. Whiskers III"]) {
        const created = await createPet({ name, categoryId: 1 })
        expect(created.status, name).toBe(201)
        expect(created.body.name).toBe(name)
      }
    })

    it("applies the same rules to key names, normalised to NFC", async () => {
      const created = await admin("/keys", "POST", { plan: "free", name: " Re\u0301my's key " })
      expect(created.status).toBe(201)
      expect(created.body.name).toBe("R\u00e9my's key")
      expectError(await admin("/keys", "POST", { plan: "free", name: "\u200B" }), 400, "invalid_request")
    })
  })
})
