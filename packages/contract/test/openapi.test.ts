import { readFileSync } from "node:fs"
import { Exit, Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { committedDocumentPath, renderDocument } from "../scripts/openapi.ts"
import {
  CORS_PREFLIGHT_MAX_AGE_SECONDS,
  corsExposedHeaders,
  documentedPetstoreApi,
  errorStatusByCode,
  IdempotencyKey,
  NewPet,
  NewWebhookEndpoint,
  PetstoreApi
} from "../src/index.ts"

const spec = OpenApi.fromApi(PetstoreApi) as any

const operations = () =>
  Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation }))
  )
const responses = () =>
  operations().flatMap(({ operation, path, method }) =>
    Object.entries(operation.responses as Record<string, any>).map(([status, response]) => ({
      where: `${method} ${path} ${status}`,
      operationId: operation.operationId as string,
      status: Number(status),
      response
    }))
  )
const parameter = (path: string, method: string, name: string) =>
  spec.paths[path][method].parameters.find((p: { name: string }) => p.name === name)

describe("the OpenAPI document generated from the contract", () => {
  it("describes the three operations under /v1 by their spec names", () => {
    expect(spec.openapi).toMatch(/^3\.1/)
    expect(spec.info.version).toBe("1.0.0")
    // Paths are relative to the servers, which end in /v1 (spec §1).
    expect(spec.paths["/pets"].get.operationId).toMatch(/listPets$/)
    expect(spec.paths["/pets"].post.operationId).toMatch(/createPet$/)
    expect(spec.paths["/pets/{petId}"].get.operationId).toMatch(/getPet$/)
  })

  it("marks getPet deprecated, and only getPet", () => {
    expect(spec.paths["/pets/{petId}"].get.deprecated).toBe(true)
    expect(spec.paths["/pets"].get.deprecated).toBeUndefined()
    expect(spec.paths["/pets"].post.deprecated).toBeUndefined()
  })

  it("requires bearer authentication on every operation", () => {
    // Exactly "bearer": documentation tools that read "Bearer" offer HTTP Basic instead. Named for what it is:
    // documentation pages offer a scheme by its name.
    expect(spec.components.securitySchemes).toEqual({
      bearerAuth: { type: "http", scheme: "bearer", description: expect.stringContaining("Authorization: Bearer") }
    })
    for (const operation of [spec.paths["/pets"].get, spec.paths["/pets"].post, spec.paths["/pets/{petId}"].get]) {
      expect(operation.security.length).toBeGreaterThan(0)
      expect(operation.responses["401"]).toBeDefined()
      expect(operation.responses["400"]).toBeDefined()
    }
  })

  it("documents 201 for createPet and 404 for getPet", () => {
    expect(spec.paths["/pets"].post.responses["201"]).toBeDefined()
    expect(spec.paths["/pets/{petId}"].get.responses["404"]).toBeDefined()
  })

  it("documents limit, status and cursor as optional query parameters", () => {
    const parameters = spec.paths["/pets"].get.parameters as Array<{ name: string; in: string; required: boolean }>
    for (const name of ["limit", "status", "cursor"]) {
      expect(parameters).toContainEqual(expect.objectContaining({ name, in: "query", required: false }))
    }
  })

  it("names the operations exactly as the spec does: listPets, createPet, getPet", () => {
    // The stable operations are the spec's; the beta ones (issue 13) are checked below.
    expect(
      operations().filter(({ operation }) => operation["x-stability"] === undefined).map(({ operation }) =>
        operation.operationId
      ).sort()
    ).toEqual(
      ["createPet", "getPet", "getRateLimit", "listPets"]
    )
  })

  it("marks every new operation, and only those, x-stability: beta, with the Stability header on every answer", () => {
    const beta = operations().filter(({ operation }) => operation["x-stability"] === "beta")
    expect(beta.map(({ operation }) => operation.operationId).sort()).toEqual(
      [
        "cancelOrder",
        "createWebhookEndpoint",
        "deletePet",
        "deleteWebhookEndpoint",
        "deliverOrder",
        "getOrder",
        "getWebhookEndpoint",
        "listEvents",
        "listOrders",
        "listWebhookAttempts",
        "listWebhookEndpoints",
        "placeOrder",
        "redeliverWebhookEvent",
        "rotateWebhookSecret",
        "testWebhookEndpoint",
        "updatePet",
        "updateWebhookEndpoint"
      ]
    )
    for (const { operation } of beta) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        // An answer given before any route (400, 404) cannot know the operation: there it may be absent.
        expect(response.headers?.Stability, `${operation.operationId} ${status}`).toEqual({
          $ref: ["400", "404"].includes(status)
            ? "#/components/headers/Stability.beforeAnyRoute"
            : "#/components/headers/Stability"
        })
      }
    }
    for (const { operation } of operations().filter(({ operation }) => operation["x-stability"] === undefined)) {
      for (const response of Object.values(operation.responses as Record<string, any>)) {
        expect(response.headers?.Stability).toBeUndefined()
      }
    }
  })

  it("links placeOrder's answer to getOrder, cancelOrder and deliverOrder by the order's id", () => {
    const links = spec.paths["/store/orders"].post.responses["201"].links
    for (const operationId of ["getOrder", "cancelOrder", "deliverOrder"]) {
      expect(links[operationId]).toMatchObject({ operationId, parameters: { orderId: "$response.body#/id" } })
    }
  })

  it("documents the ETag of every Pet answer and If-Match on PATCH and DELETE", () => {
    expect(spec.paths["/pets"].post.responses["201"].headers.ETag).toBeDefined()
    expect(spec.paths["/pets/{petId}"].get.responses["200"].headers.ETag).toBeDefined()
    expect(spec.paths["/pets/{petId}"].patch.responses["200"].headers.ETag).toBeDefined()
    for (const method of ["patch", "delete"]) {
      expect(spec.paths["/pets/{petId}"][method].parameters).toContainEqual(
        expect.objectContaining({ name: "If-Match", in: "header", required: false })
      )
      expect(spec.paths["/pets/{petId}"][method].responses["412"]).toBeDefined()
    }
  })

  it("puts /v1 in the servers and every path relative to them; a deployment's servers replace the default", () => {
    expect(spec.servers).toEqual([{ url: "/v1", description: expect.any(String) }])
    expect(Object.keys(spec.paths).filter((path) => !/^\/(store|webhooks|events)/.test(path)).sort()).toEqual(
      ["/pets", "/pets/{petId}", "/rate_limit"]
    )
    expect(Object.keys(spec.paths).filter((path) => path.startsWith("/store/")).sort()).toEqual(
      ["/store/orders", "/store/orders/{orderId}", "/store/orders/{orderId}/cancel", "/store/orders/{orderId}/deliver"]
    )
    const configured = OpenApi.fromApi(documentedPetstoreApi([
      { url: "https://pets.example.com/v1", description: "Production" },
      { url: "https://staging.pets.example.com/v1", description: "Staging" }
    ])) as any
    expect(configured.servers.map((server: { url: string }) => server.url)).toEqual([
      "https://pets.example.com/v1",
      "https://staging.pets.example.com/v1"
    ])
    expect(configured.paths).toEqual(spec.paths)
  })

  it("types limit as an integer from 1 to 100, default 20, and petId as an int64 from 1, both in decimal digits", () => {
    const limit = parameter("/pets", "get", "limit")
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 20 })
    expect(limit.description).toMatch(/decimal digits/)
    const petId = parameter("/pets/{petId}", "get", "petId")
    expect(petId.schema).toMatchObject({
      type: "integer",
      format: "int64",
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER
    })
    expect(petId.description).toMatch(/decimal digits/)
  })

  it("gives categoryId one flat minimum of 1, and examples the server accepts", () => {
    const newPet = spec.components.schemas.NewPet
    expect(newPet.properties.categoryId).toMatchObject({ type: "integer", format: "int64", minimum: 1 })
    expect(newPet.properties.categoryId.allOf).toBeUndefined()
    const example = { name: newPet.properties.name.examples[0], categoryId: newPet.properties.categoryId.examples[0] }
    expect(Exit.isSuccess(Schema.decodeUnknownExit(NewPet)(example))).toBe(true)
  })

  it("has one Error schema, { code: string, message: string, status: integer }, which every error answer uses", () => {
    const names = Object.keys(spec.components.schemas)
    expect(names).toEqual(expect.arrayContaining(["Pet", "NewPet", "Pets", "PetStatus", "Error"]))
    expect(names.filter((name) => name.endsWith("Encoded"))).toEqual([])
    const error = spec.components.schemas.Error
    expect(error.required).toEqual(["code", "message", "status"])
    expect(error.properties.code.type).toBe("string")
    expect(error.properties.message.type).toBe("string")
    expect(error.properties.status.type).toBe("integer")
    for (const { where, status, response } of responses()) {
      if (status < 400) continue
      expect(response.content["application/json"].schema, where).toEqual({ $ref: "#/components/schemas/Error" })
    }
  })

  it("documents the rate-limit headers on every answer, Retry-After on 429 and WWW-Authenticate on 401", () => {
    const rateLimit = [
      "X-RateLimit-Limit",
      "X-RateLimit-Remaining",
      "X-RateLimit-Reset",
      "RateLimit",
      "RateLimit-Policy"
    ]
    for (const { where, status, response } of responses()) {
      const headers = Object.keys(response.headers ?? {})
      expect(headers, where).toEqual(
        expect.arrayContaining(["Cache-Control", "X-Content-Type-Options", "X-Request-Id"])
      )
      expect(headers, where).toEqual(expect.arrayContaining(rateLimit))
      // Required where every such answer has them: not on what is answered before any route (README
      // "Errors": no quota spent) nor on a 503 given before the quota was decided (README "Quotas").
      const absentWhen = status === 503 ? "databaseAway" : [400, 404].includes(status) ? "beforeAnyRoute" : undefined
      for (const name of rateLimit) {
        expect(response.headers[name], `${where} ${name}`).toEqual({
          $ref: `#/components/headers/${absentWhen === undefined ? name : `${name}.${absentWhen}`}`
        })
      }
      if (status === 429 || status === 503) expect(headers, where).toContain("Retry-After")
      if (status === 401) expect(headers, where).toContain("WWW-Authenticate")
    }
    for (const name of [...rateLimit, "Retry-After", "WWW-Authenticate"]) {
      expect(spec.components.headers[name], name).toMatchObject({ required: true, schema: expect.any(Object) })
    }
    for (const name of rateLimit) {
      for (const absentWhen of ["beforeAnyRoute", "databaseAway"]) {
        expect(spec.components.headers[`${name}.${absentWhen}`], name).toMatchObject({
          required: false,
          description: expect.stringContaining("Absent "),
          schema: spec.components.headers[name].schema
        })
      }
    }
  })

  it("documents the CORS headers on every answer as absent unless the origin is allowed, and the preflight in prose", () => {
    for (const { where, response } of responses()) {
      expect(response.headers["Access-Control-Allow-Origin"], where).toEqual({
        $ref: "#/components/headers/Access-Control-Allow-Origin.originNotAllowed"
      })
      expect(response.headers["Access-Control-Expose-Headers"], where).toEqual({
        $ref: "#/components/headers/Access-Control-Expose-Headers.originNotAllowed"
      })
    }
    // No answer always carries them, so they have no required definition.
    expect(spec.components.headers["Access-Control-Allow-Origin"]).toBeUndefined()
    expect(spec.components.headers["Access-Control-Allow-Origin.originNotAllowed"]).toMatchObject({
      required: false,
      description: expect.stringContaining("Absent unless the request's `Origin` is one that `CORS_ALLOWED_ORIGINS`")
    })
    // Exactly what the server exposes, so a page's reader knows what it may read.
    expect(spec.components.headers["Access-Control-Expose-Headers.originNotAllowed"].schema.enum).toEqual([
      corsExposedHeaders
    ])
    for (const name of ["X-RateLimit-Remaining", "Retry-After", "Location", "Link", "ETag", "X-Request-Id"]) {
      expect(corsExposedHeaders.split(", "), name).toContain(name)
    }
    // The preflight is the browser's: said in the description, not an OPTIONS operation of any path.
    expect(operations().filter(({ method }) => method === "options")).toEqual([])
    expect(spec.info.description).toContain(
      "a preflight (`OPTIONS` on any path, with `Origin` and `Access-Control-Request-Method`) is answered 204"
    )
    expect(spec.info.description).toContain(`\`Access-Control-Max-Age: ${CORS_PREFLIGHT_MAX_AGE_SECONDS}\``)
  })

  it("documents Location on 201, and Deprecation, Sunset and the successor Link on every answer of getPet", () => {
    expect(spec.paths["/pets"].post.responses["201"].headers.Location).toMatchObject({ required: true })
    expect(spec.paths["/pets"].get.responses["200"].headers.Link).toMatchObject({ required: false })
    for (const [status, response] of Object.entries(spec.paths["/pets/{petId}"].get.responses as Record<string, any>)) {
      expect(Object.keys(response.headers), status).toEqual(expect.arrayContaining(["Deprecation", "Sunset", "Link"]))
    }
    expect(spec.components.headers.Sunset.schema.enum).toEqual(["Thu, 05 Dec 2030 00:00:00 GMT"])
  })

  it("links createPet's answer to getPet by the created id", () => {
    const links = spec.paths["/pets"].post.responses["201"].links
    expect(links.getPet).toMatchObject({ operationId: "getPet", parameters: { petId: "$response.body#/id" } })
    const ids = new Set(operations().map(({ operation }) => operation.operationId))
    for (const { where, response } of responses()) {
      for (const link of Object.values((response.links ?? {}) as Record<string, { operationId: string }>)) {
        expect(ids.has(link.operationId), where).toBe(true)
      }
    }
  })
})

describe("the document's patterns say what the contract decodes", () => {
  const namePattern = new RegExp(spec.components.schemas.NewPet.properties.name.pattern, "u")
  const decodesName = (name: string) => Exit.isSuccess(Schema.decodeUnknownExit(NewPet)({ name, categoryId: 1 }))

  it("name: trimmed 1–100 characters without NUL, with whitespace of every kind JavaScript trims", () => {
    const cases = [
      "Rex",
      " Rex ",
      "\u00a0Rex\u3000",
      "\ufeffRex\u2028",
      "R",
      "x".repeat(100),
      ` ${"x".repeat(100)}\t`,
      "a b",
      "é".repeat(100),
      "",
      " ",
      "\t\n\u000b\u000c\r\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff",
      "x".repeat(101),
      "Re\u0000x",
      "\u0000",
      "Rex\u0000 ",
      "\u200bRex",
      "\u0085",
      "a".repeat(99) + "\u0000"
    ]
    for (const name of cases) {
      expect(namePattern.test(name), JSON.stringify(name)).toBe(decodesName(name))
    }
  })

  it("name: the one difference is length in UTF-16 code units, which the description states", () => {
    const emoji = "😀".repeat(60)
    expect(namePattern.test(emoji)).toBe(true)
    expect(decodesName(emoji)).toBe(false)
    expect(spec.components.schemas.NewPet.properties.name.description).toMatch(/UTF-16 code units/)
  })

  it("Idempotency-Key: 1–255 characters once trimmed and unquoted", () => {
    const keyPattern = new RegExp(parameter("/pets", "post", "Idempotency-Key").schema.pattern, "u")
    const decodes = (value: string) => Exit.isSuccess(Schema.decodeUnknownExit(IdempotencyKey)(value))
    const cases = [
      "k",
      "\"k\"",
      "\"",
      "\"\"",
      "\"a",
      "a\"",
      " k ",
      "\u00a0k\u00a0",
      "\" \"",
      "\u00a0",
      " ",
      "\t",
      "",
      "x".repeat(255),
      "x".repeat(256),
      `"${"x".repeat(255)}"`,
      `"${"x".repeat(256)}"`,
      "ä€ÿ",
      "\u00a0\"k\"\u00a0"
    ]
    for (const value of cases) {
      expect(keyPattern.test(value), JSON.stringify(value)).toBe(decodes(value))
    }
  })

  it("cursor: every cursor the server issues for ids of up to 15 digits", () => {
    const cursorPattern = new RegExp(parameter("/pets", "get", "cursor").schema.pattern, "u")
    const issued = (id: string) => Buffer.from(`after:${id}`).toString("base64url")
    for (let digits = 1; digits <= 15; digits++) {
      for (const id of ["1", "9", "5"].map((first) => first + "0123456789".repeat(2).slice(0, digits - 1))) {
        expect(cursorPattern.test(issued(id)), id).toBe(true)
      }
    }
    for (const id of ["0", "01", "1".repeat(16), "-1", "1.5"]) expect(cursorPattern.test(issued(id)), id).toBe(false)
    expect(cursorPattern.test("")).toBe(false)
  })
})

describe("the document says what the server enforces on events and webhooks", () => {
  it("GET /events: limit is an integer from 1 to 100, default 20, like every page's", () => {
    expect(parameter("/events", "get", "limit").schema).toEqual({
      type: "integer",
      minimum: 1,
      maximum: 100,
      default: 20
    })
  })

  it("GET /events: cursor has the exact pattern of the cursors the server issues", () => {
    const cursorPattern = new RegExp(parameter("/events", "get", "cursor").schema.pattern, "u")
    // The server's encodeEventCursor: the hexadecimal of `events:<tx>.<seq>`.
    const issued = (tx: string, seq: string) => Buffer.from(`events:${tx}.${seq}`).toString("hex")
    for (const tx of ["1", "742", "9".repeat(19)]) {
      for (const seq of ["1", "12", "9".repeat(15)]) {
        expect(cursorPattern.test(issued(tx, seq)), `${tx}.${seq}`).toBe(true)
      }
    }
    for (
      const [tx, seq] of [["0", "1"], ["01", "1"], ["1".repeat(20), "1"], ["1", "0"], ["1", "1".repeat(16)], [
        "-1",
        "1"
      ]]
    ) {
      expect(cursorPattern.test(issued(tx!, seq!)), `${tx}.${seq}`).toBe(false)
    }
    expect(cursorPattern.test(issued("7", "1").toUpperCase())).toBe(false)
    expect(cursorPattern.test(Buffer.from("events:7.1").toString("base64url"))).toBe(false)
  })

  it("webhook url: the contract's pattern is in the document, and both accept and refuse alike", () => {
    for (const schema of ["NewWebhookEndpoint", "WebhookEndpointPatch"]) {
      expect(spec.components.schemas[schema].properties.url).toMatchObject({
        maxLength: 2048,
        pattern: expect.any(String)
      })
    }
    const urlPattern = new RegExp(spec.components.schemas.NewWebhookEndpoint.properties.url.pattern, "u")
    const decodes = (url: string) => Exit.isSuccess(Schema.decodeUnknownExit(NewWebhookEndpoint)({ url }))
    for (
      const url of [
        "https://a.example/x",
        "HTTP://a.example",
        "Https://a.example/?q=1",
        "ftp://a.example",
        "https://",
        "https://a b",
        "https://a\u00a0b",
        " https://a.example",
        "https://a\u3000"
      ]
    ) {
      expect(urlPattern.test(url), url).toBe(decodes(url))
    }
    expect(urlPattern.test("https://a.example/x")).toBe(true)
    expect(urlPattern.test("ftp://a.example")).toBe(false)
  })
})

describe("the document as documentation pages show it", () => {
  const webhooks = Object.values(spec.webhooks as Record<string, { post: any }>).map(({ post }) => post)

  it("summaries are plain text: no Markdown, which pages show as typed", () => {
    const summaries = [
      ...operations().map(({ operation }) => operation.summary),
      ...webhooks.map((post) => post.summary)
    ]
    expect(summaries.filter((summary: string) => /[`*_[\]]/.test(summary))).toEqual([])
  })

  it("webhooks sit under the webhooks tag, beside the operations that manage endpoints: one section", () => {
    for (const post of webhooks) expect(post.tags).toEqual(["webhooks"])
    expect(spec.tags.map((tag: { name: string }) => tag.name)).toContain("webhooks")
  })

  it("every value in the schemas, headers and webhooks has an example, an enum or a default: no empty strings in samples", () => {
    const bare: Array<string> = []
    const walk = (node: unknown, where: string): void => {
      if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${where}/${i}`))
      if (typeof node !== "object" || node === null) return
      const schema = node as Record<string, unknown>
      if (
        ["string", "integer", "number", "boolean"].includes(schema.type as string) &&
        !["examples", "enum", "const", "default"].some((keyword) => keyword in schema)
      ) bare.push(where)
      for (const [key, value] of Object.entries(schema)) if (key !== "examples") walk(value, `${where}/${key}`)
    }
    walk(spec.components, "components")
    walk(spec.webhooks, "webhooks")
    expect(bare).toEqual([])
  })
})

describe("the committed openapi.json", () => {
  it("is exactly what the contract generates (regenerate: pnpm --filter @petstore/contract openapi)", () => {
    expect(readFileSync(committedDocumentPath, "utf8")).toBe(renderDocument())
  })
})

describe("the README's error table", () => {
  it("lists every error code with its status, as errorStatusByCode has them", () => {
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8")
    for (const [code, status] of Object.entries(errorStatusByCode)) {
      expect(readme, code).toMatch(new RegExp(`^\\| \`${code}\` \\| ${status} \\|`, "m"))
    }
  })
})
