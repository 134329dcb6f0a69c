import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { InvalidRequest, NotFound } from "./ApiError.ts"
import { ApiKeyId, KeyRole } from "./Keys.ts"
import { displayName } from "./Names.ts"
import { AdminAuth, RequestValidation } from "./Middleware.ts"
import { PageSize } from "./PetstoreApi.ts"
import { Plan, QuotaLimits } from "./Plan.ts"
import { KeyUsage } from "./RateLimit.ts"
import { WebhookEndpoint } from "./WebhookEndpoints.ts"

/** A key's name, a label for people: docs/security.md, "What a name may hold" (Names.ts), up to 200 characters. */
export const ApiKeyName = displayName(200, "A label for the key, shown to operators.", ["ci bot"])

/** The furthest a key's `expiresAt` may lie ahead: 366 days, so that "a year from today" always fits. */
export const MAX_KEY_LIFETIME_SECONDS = 366 * 86_400

/** An RFC 3339 timestamp with its offset; whether it is in the future is the server's to judge, by its clock. */
export const Rfc3339 = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/, {
    expected: "an RFC 3339 timestamp such as 2027-01-31T00:00:00Z"
  })
)

const ExpiresAt = Rfc3339.annotate({
  description: "When the key stops working (RFC 3339): in the future, at most 366 days ahead"
})

export const CreateKeyRequest = Schema.Struct({
  plan: Plan,
  name: Schema.optionalKey(ApiKeyName),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole.annotate({ description: "`customer` when left out" })),
  expiresAt: Schema.optionalKey(ExpiresAt)
}).annotate({ description: "`limits` is required for the enterprise plan and refused for the others" })
export type CreateKeyRequest = typeof CreateKeyRequest.Type

export const UpdateKeyRequest = Schema.Struct({
  plan: Schema.optionalKey(Plan),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole),
  expiresAt: Schema.optionalKey(Schema.NullOr(ExpiresAt).annotate({ description: "`null` makes the key never expire" }))
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
  createdAt: Schema.String.annotate({ description: "ISO 8601 timestamp" }),
  // Present only when set, as `role` is, so that clients reading views strictly keep working.
  expiresAt: Schema.optionalKey(Schema.String.annotate({ description: "When the key stops working; absent: never" })),
  previousKeyExpiresAt: Schema.optionalKey(Schema.String.annotate({
    description: "While a roll's overlap lasts: when the secret the key had before the roll stops working"
  })),
  lastUsedAt: Schema.optionalKey(Schema.String.annotate({
    description: "The key's last use, to the minute; absent: never used"
  }))
}) {}

/** Which keys `GET /admin/keys` lists: the live ones (the default), or those that expired and are not purged yet. */
export const ListKeysQuery = Schema.Struct({
  state: Schema.optionalKey(
    Schema.Literals(["live", "expired"]).annotate({
      description: "`live` (the default) or `expired`: keys past their `expiresAt`, kept 30 days, then purged"
    })
  )
})

export const DEFAULT_ROLL_OVERLAP_SECONDS = 86_400
export const MAX_ROLL_OVERLAP_SECONDS = 604_800

export const RollKeyRequest = Schema.Struct({
  overlapSeconds: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween({ minimum: 0, maximum: MAX_ROLL_OVERLAP_SECONDS }, {
        expected: `a whole number of seconds from 0 to ${MAX_ROLL_OVERLAP_SECONDS}`
      })
    ).annotate({ description: "How long the secret before the roll keeps working (default 86400, one day)" })
  )
})
export type RollKeyRequest = typeof RollKeyRequest.Type

/** What an operator did through the admin API. */
export const AuditAction = Schema.Literals(["key.created", "key.updated", "key.rolled", "key.revoked", "key.unbanned"])
  .annotate({ identifier: "AuditAction" })
export type AuditAction = typeof AuditAction.Type

/** One change made through the admin API; never a secret. */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: Schema.String.annotate({ description: "Opaque; newer entries have greater ids" }),
  occurredAt: Schema.String.annotate({ description: "ISO 8601 timestamp" }),
  action: AuditAction,
  keyId: ApiKeyId,
  changes: Schema.Record(Schema.String, Schema.Json).annotate({
    description: "What changed: for a change, each field's `from` and `to`; for a creation, the key's settings"
  }),
  clientAddress: Schema.String.annotate({ description: "The address the admin call came from" })
}) {}

export const AUDIT_RETENTION_DAYS = 400

export const ListAuditQuery = Schema.Struct({
  keyId: Schema.optionalKey(ApiKeyId),
  action: Schema.optionalKey(AuditAction),
  limit: Schema.optionalKey(PageSize.annotate({ description: "Entries a page, 1–100 (default 20)" })),
  cursor: Schema.optionalKey(Schema.String.annotate({
    description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
  }))
})
export type ListAuditQuery = typeof ListAuditQuery.Type

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
    HttpApiEndpoint.get("listKeys", "/keys", { query: ListKeysQuery, success: Schema.Array(ApiKeyView) }),
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
    // A new secret for the same key; the one before keeps working for the overlap.
    HttpApiEndpoint.post("rollKey", "/keys/:id/roll", {
      params: keyParams,
      payload: RollKeyRequest,
      success: CreatedKey,
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

export class AuditGroup extends HttpApiGroup.make("audit")
  .add(
    // Newest first, a page at a time (keyset pagination through the `Link` header).
    HttpApiEndpoint.get("listAudit", "/audit", {
      query: ListAuditQuery,
      success: HttpApiSchema.WithHeaders(Schema.Array(AuditEntry), {
        link: Schema.optionalKey(
          Schema.String.annotate({ description: "`<url>; rel=\"next\"` when older entries follow" })
        )
      }),
      error: InvalidRequest
    })
  )
  .middleware(RequestValidation)
  .middleware(AdminAuth)
{}

/** The operator's API, served only on the admin listener. */
export class AdminApi extends HttpApi.make("petstore-admin")
  .add(KeysGroup)
  .add(AuditGroup)
  .prefix("/admin")
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({ title: "Animal Adoption Store Service: admin", version: "1.0.0" }))
{}
