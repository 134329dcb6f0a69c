import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { InvalidRequest, PayloadTooLarge, RateLimited, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"
import type { ApiKeyId, KeyRole } from "./Keys.ts"
import type { Plan } from "./Plan.ts"

/**
 * `Authorization: Bearer <token>`, declared with the scheme in lower case: the
 * scheme is case-insensitive on the wire, but OpenAPI tools (Scalar's "try it"
 * and its code samples among them) compare the document's `scheme` with
 * "bearer" exactly, and take anything else for HTTP Basic.
 */
const bearer = HttpApiSecurity.http({ scheme: "bearer" })

/**
 * The public API's scheme, named for what it is (`bearerAuth`): documentation pages offer a scheme by its
 * name, and the docs page preselects it, so that a reader pastes a key and sends.
 */
export const API_KEY_SECURITY_SCHEME = "bearerAuth" satisfies keyof typeof ApiKeyAuth.security

const apiKeyBearer = bearer.pipe(HttpApiSecurity.annotate(
  OpenApi.Description,
  "An API key (`psk_…`), sent as `Authorization: Bearer <API_KEY>`. The operator issues keys through the admin API."
))

/** The API key an operation is called with: what `ApiKeyAuth` provides to every operation it guards. */
export class CurrentApiKey extends Context.Service<CurrentApiKey, {
  readonly id: ApiKeyId
  readonly plan: Plan
  readonly role: KeyRole
}>()("@petstore/contract/CurrentApiKey") {}

/**
 * Bearer authentication with an API key (spec §5). Every request it admits
 * also spends quota (spec §8), so it answers 429 as well as 401. An operation
 * behind it always has its `CurrentApiKey`.
 */
export class ApiKeyAuth
  extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentApiKey }>()("@petstore/contract/ApiKeyAuth", {
    security: { bearerAuth: apiKeyBearer },
    error: [Unauthorized, RateLimited]
  })
{}

const adminTokenBearer = bearer.pipe(HttpApiSecurity.annotate(
  OpenApi.Description,
  "The operator's admin token (`ADMIN_TOKEN`), sent as `Authorization: Bearer <ADMIN_TOKEN>`. API keys are refused here."
))

/** Bearer authentication with the operator's admin token (admin listener only). */
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth>()("@petstore/contract/AdminAuth", {
  security: { adminToken: adminTokenBearer },
  error: Unauthorized
}) {}

/**
 * Turns every way a request can be malformed into a documented error:
 * decode failures of path, query and body (400 with details), a body that is
 * not JSON (415) and a body over the size limit (413).
 */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()(
  "@petstore/contract/RequestValidation",
  { error: [InvalidRequest, UnsupportedMediaType, PayloadTooLarge] }
) {}
