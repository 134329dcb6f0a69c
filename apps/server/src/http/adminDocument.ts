import { ADMIN_BASE_PATH, AdminApi, Unauthorized } from "@petstore/contract"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity, OpenApi } from "effect/http-api"
import { AppConfig } from "../config.ts"
import { isAdminToken } from "./ApiKeyAuth.ts"
import { errorResponse } from "./errors.ts"

/**
 * The admin API's OpenAPI document (the contract's `openapi.admin.json`), for the admin token only, as every
 * admin route is. Rendered on its first request, not at start-up: few deployments ever ask for it, and an idle
 * server keeps no bytes for it until one does. It is the operator's, so caches must not keep it.
 */
export const AdminDocumentRoute = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const { adminToken } = yield* AppConfig
  const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)
  const document = yield* Effect.cached(Effect.sync(() => Buffer.from(JSON.stringify(OpenApi.fromApi(AdminApi)))))
  yield* router.add(
    "GET",
    `${ADMIN_BASE_PATH}/openapi.json`,
    Effect.gen(function*() {
      if (!isAdminToken(adminToken, yield* bearerCredential)) {
        return errorResponse(
          new Unauthorized({ message: "A valid admin token is required: send `Authorization: Bearer $ADMIN_TOKEN`" })
        )
      }
      return HttpServerResponse.uint8Array(yield* document, {
        contentType: "application/json",
        headers: { "cache-control": "no-store", "x-content-type-options": "nosniff" }
      })
    })
  )
}))
