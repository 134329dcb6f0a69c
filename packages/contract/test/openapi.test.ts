import { describe, expect, it } from "vitest"
import { OpenApi } from "effect/http-api"
import { PetstoreApi } from "../src/index.ts"

const spec = OpenApi.fromApi(PetstoreApi) as any

describe("the OpenAPI document generated from the contract", () => {
  it("describes the three operations under /v1 by their spec names", () => {
    expect(spec.openapi).toMatch(/^3\.1/)
    expect(spec.info.version).toBe("1.0.0")
    expect(spec.paths["/v1/pets"].get.operationId).toMatch(/listPets$/)
    expect(spec.paths["/v1/pets"].post.operationId).toMatch(/createPet$/)
    expect(spec.paths["/v1/pets/{petId}"].get.operationId).toMatch(/getPet$/)
  })

  it("marks getPet deprecated, and only getPet", () => {
    expect(spec.paths["/v1/pets/{petId}"].get.deprecated).toBe(true)
    expect(spec.paths["/v1/pets"].get.deprecated).toBeUndefined()
    expect(spec.paths["/v1/pets"].post.deprecated).toBeUndefined()
  })

  it("requires bearer authentication on every operation", () => {
    // Exactly "bearer": documentation tools that read "Bearer" offer HTTP Basic instead.
    expect(spec.components.securitySchemes.apiKey).toEqual({ type: "http", scheme: "bearer" })
    for (const operation of [spec.paths["/v1/pets"].get, spec.paths["/v1/pets"].post, spec.paths["/v1/pets/{petId}"].get]) {
      expect(operation.security.length).toBeGreaterThan(0)
      expect(operation.responses["401"]).toBeDefined()
      expect(operation.responses["400"]).toBeDefined()
    }
  })

  it("documents 201 for createPet and 404 for getPet", () => {
    expect(spec.paths["/v1/pets"].post.responses["201"]).toBeDefined()
    expect(spec.paths["/v1/pets/{petId}"].get.responses["404"]).toBeDefined()
  })

  it("documents limit, status and cursor as optional query parameters", () => {
    const parameters = spec.paths["/v1/pets"].get.parameters as Array<{ name: string; in: string; required: boolean }>
    for (const name of ["limit", "status", "cursor"]) {
      expect(parameters).toContainEqual(expect.objectContaining({ name, in: "query", required: false }))
    }
  })
})
