import { readFileSync } from "node:fs"
import { OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { committedAdminDocumentPath, renderAdminDocument } from "../scripts/openapi.ts"
import {
  AdminApi,
  AUDIT_RETENTION_DAYS,
  DEFAULT_ROLL_OVERLAP_SECONDS,
  MAX_PAGE_SIZE,
  MAX_ROLL_OVERLAP_SECONDS
} from "../src/index.ts"

const spec = OpenApi.fromApi(AdminApi) as any

const operations = () =>
  Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ where: `${method} ${path}`, operation }))
  )

describe("the admin API's OpenAPI document generated from the contract", () => {
  it("has every admin operation, by its endpoint's name, relative to the /admin server", () => {
    expect(spec.openapi).toMatch(/^3\.1/)
    expect(spec.servers).toEqual([{ url: "/admin", description: expect.any(String) }])
    expect(operations().map(({ where, operation }) => `${where} ${operation.operationId}`).sort()).toEqual([
      "delete /keys/{id} revokeKey",
      "get /audit listAudit",
      "get /keys listKeys",
      "get /keys/{id}/usage keyUsage",
      "get /keys/{id}/webhook-endpoints keyWebhookEndpoints",
      "patch /keys/{id} updateKey",
      "post /keys createKey",
      "post /keys/{id}/roll rollKey",
      "post /keys/{id}/unban unbanKey"
    ])
  })

  it("gives every operation a summary, a description, the admin token and its errors in the one Error schema", () => {
    expect(spec.components.securitySchemes).toEqual({
      adminToken: { type: "http", scheme: "bearer", description: expect.stringContaining("Bearer <ADMIN_TOKEN>") }
    })
    for (const { where, operation } of operations()) {
      expect(operation.summary, where).toEqual(expect.any(String))
      expect(operation.description, where).toEqual(expect.any(String))
      expect(operation.security, where).toEqual([{ adminToken: [] }])
      for (const status of ["400", "401", "503"]) {
        expect(operation.responses[status], `${where} ${status}`).toBeDefined()
      }
      if (where.includes("{id}")) expect(operation.responses["404"], where).toBeDefined()
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        expect(response.headers["X-Request-Id"], `${where} ${status}`).toBeDefined()
        if (Number(status) >= 400) {
          expect(response.content["application/json"].schema, `${where} ${status}`).toEqual({
            $ref: "#/components/schemas/Error"
          })
        }
      }
      expect(operation.responses["401"].headers["WWW-Authenticate"], where).toBeDefined()
      expect(operation.responses["401"].description, where).toMatch(/admin token/)
    }
    expect(spec.components.headers["WWW-Authenticate"].schema.pattern).toContain("petstore-admin")
  })

  it("documents expiry, last use and a roll's overlap with their ranges", () => {
    const create = spec.paths["/keys"].post.requestBody.content["application/json"].schema
    expect(create.properties.expiresAt.description).toMatch(/366 days/)
    const update = spec.paths["/keys/{id}"].patch.requestBody.content["application/json"].schema
    expect(JSON.stringify(update.properties.expiresAt)).toMatch(/null/)
    const view = spec.components.schemas.ApiKey.properties
    expect(view.expiresAt.description).toMatch(/absent: never/)
    expect(view.lastUsedAt.description).toMatch(/minute/)
    expect(view.previousKeyExpiresAt.description).toContain(String(MAX_ROLL_OVERLAP_SECONDS))
    const roll = spec.paths["/keys/{id}/roll"].post.requestBody.content["application/json"].schema
    expect(roll.properties.overlapSeconds).toMatchObject({
      type: "integer",
      minimum: 0,
      maximum: MAX_ROLL_OVERLAP_SECONDS
    })
    expect(roll.properties.overlapSeconds.description).toContain(String(DEFAULT_ROLL_OVERLAP_SECONDS))
    expect(spec.paths["/keys/{id}/roll"].post.responses["200"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/CreatedKey"
    })
  })

  it("documents the audit trail: its entry, its filters and its pages", () => {
    const entry = spec.components.schemas.AuditEntry
    expect(entry.required).toEqual(["id", "occurredAt", "action", "keyId", "changes", "clientAddress"])
    expect(spec.components.schemas.AuditAction.enum).toContain("key.rolled")
    const listAudit = spec.paths["/audit"].get
    expect(listAudit.description).toContain(`${AUDIT_RETENTION_DAYS} days`)
    const parameter = (name: string) => listAudit.parameters.find((p: { name: string }) => p.name === name)
    expect(parameter("keyId").schema.pattern).toBe("^key_[0-9a-z]{16}$")
    expect(parameter("action").schema).toEqual({ $ref: "#/components/schemas/AuditAction" })
    expect(parameter("limit").schema).toMatchObject({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE })
    expect(parameter("cursor").schema.pattern).toEqual(expect.any(String))
    expect(listAudit.responses["200"].headers.Link.required).toBe(false)
    expect(spec.paths["/keys"].get.parameters[0]).toMatchObject({
      name: "state",
      schema: { enum: ["live", "expired"] }
    })
  })
})

describe("the committed openapi.admin.json", () => {
  it("is exactly what the contract generates (regenerate: pnpm --filter @petstore/contract openapi)", () => {
    expect(readFileSync(committedAdminDocumentPath, "utf8")).toBe(renderAdminDocument())
  })
})
