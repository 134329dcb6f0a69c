import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, NotFound } from "./ApiError.ts"
import { ApiKeyId, KeyRole } from "./Keys.ts"
import { displayName } from "./Names.ts"
import { AdminAuth, RequestValidation } from "./Middleware.ts"
import { Plan, QuotaLimits } from "./Plan.ts"
import { KeyUsage } from "./RateLimit.ts"
import { WebhookEndpoint } from "./WebhookEndpoints.ts"

/** A key's name, a label for people: README "What a name may hold" (Names.ts), up to 200 characters. */
export const ApiKeyName = displayName(200, "A label for the key, shown to operators.", ["ci bot"])

export const CreateKeyRequest = Schema.Struct({
  plan: Plan,
  name: Schema.optionalKey(ApiKeyName),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole.annotate({ description: "`customer` when left out" }))
}).annotate({ description: "`limits` is required for the enterprise plan and refused for the others" })
export type CreateKeyRequest = typeof CreateKeyRequest.Type

export const UpdateKeyRequest = Schema.Struct({
  plan: Schema.optionalKey(Plan),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole)
})
export type UpdateKeyRequest = typeof UpdateKeyRequest.Type

/** An API key as the admin API shows it: never the secret, which is stored only as a hash. */
export class ApiKeyView extends Schema.Class<ApiKeyView>("ApiKey")({
  id: ApiKeyId,
  name: Schema.String,
  plan: Plan,
  limits: QuotaLimits,
  /** Shown for staff keys only: a view without `role` is a customer's, as every key's was before roles. */
  role: Schema.optionalKey(
    Schema.Literal("staff").annotate({ description: "Present on staff keys; absent on customer keys" })
  ),
  createdAt: Schema.String.annotate({ description: "ISO 8601 timestamp" })
}) {}

/** The answer to a key creation: the only time the secret is shown. */
export class CreatedKey extends Schema.Class<CreatedKey>("CreatedKey")({
  ...ApiKeyView.fields,
  key: Schema.String.annotate({ description: "The API key itself. Shown once; store it now." })
}) {}

const keyParams = { id: ApiKeyId }

export class KeysGroup extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("createKey", "/keys", {
      payload: CreateKeyRequest,
      success: CreatedKey.pipe(HttpApiSchema.status(201)),
      error: InvalidRequest
    }),
    HttpApiEndpoint.get("listKeys", "/keys", { success: Schema.Array(ApiKeyView) }),
    HttpApiEndpoint.patch("updateKey", "/keys/:id", {
      params: keyParams,
      payload: UpdateKeyRequest,
      success: ApiKeyView,
      error: [NotFound, InvalidRequest]
    }),
    HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
      params: keyParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }),
    HttpApiEndpoint.get("keyUsage", "/keys/:id/usage", { params: keyParams, success: KeyUsage, error: NotFound }),
    HttpApiEndpoint.post("unbanKey", "/keys/:id/unban", {
      params: keyParams,
      success: HttpApiSchema.NoContent,
      error: NotFound
    }),
    // The key's webhook endpoints as it sees them (never their secrets): whether each is enabled, and why not.
    HttpApiEndpoint.get("keyWebhookEndpoints", "/keys/:id/webhook-endpoints", {
      params: keyParams,
      success: Schema.Array(WebhookEndpoint),
      error: NotFound
    })
  )
  .middleware(RequestValidation)
  .middleware(AdminAuth)
{}

/** The operator's API, served only on the admin listener. */
export class AdminApi extends HttpApi.make("petstore-admin")
  .add(KeysGroup)
  .prefix("/admin")
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({ title: "Animal Adoption Store Service: admin", version: "1.0.0" }))
{}
