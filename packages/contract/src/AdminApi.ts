import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ErrorBody, InvalidRequest, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { ApiKeyId, KeyRole } from "./Keys.ts"
import { displayName } from "./Names.ts"
import { AdminAuth, RequestValidation } from "./Middleware.ts"
import { describeAnswers, describeParameters, documentApi, renameEncodedSchemas } from "./OpenApiDocument.ts"
import { pageParameters, PageSize } from "./Paging.ts"
import { Plan, QuotaLimits } from "./Plan.ts"
import { KeyUsage } from "./RateLimit.ts"
import { adminHeadersOf, adminResponseHeaders, headerNames } from "./ResponseHeaders.ts"
import { WebhookEndpoint } from "./WebhookEndpoints.ts"

/** A key's name, a label for people: docs/security.md, "What a name may hold" (Names.ts), up to 200 characters. */
export const ApiKeyName = displayName(200, "A label for the key, shown to operators.", ["ci bot"])

/** The furthest a key's `expiresAt` may lie ahead: 366 days, so that "a year from today" always fits. */
export const MAX_KEY_LIFETIME_SECONDS = 366 * 86_400

export const DEFAULT_ROLL_OVERLAP_SECONDS = 86_400
export const MAX_ROLL_OVERLAP_SECONDS = 604_800

/** An RFC 3339 timestamp with its offset; whether it is in the future is the server's to judge, by its clock. */
export const Rfc3339 = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/, {
    expected: "an RFC 3339 timestamp such as 2027-01-31T00:00:00Z"
  })
)

const ExpiresAt = Rfc3339.annotate({
  description: "When the key stops working (RFC 3339 with an offset): in the future, at most 366 days " +
    `(${MAX_KEY_LIFETIME_SECONDS} seconds) ahead by the server's clock; from then on the key is 401 \`invalid_token\``,
  examples: ["2027-01-31T00:00:00Z"]
})

export const CreateKeyRequest = Schema.Struct({
  plan: Plan,
  name: Schema.optionalKey(ApiKeyName),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole),
  expiresAt: Schema.optionalKey(ExpiresAt)
}).annotate({
  description: "`limits` is required for the enterprise plan and refused for the others; `role` is `customer` " +
    "when left out; without `expiresAt` the key never expires"
})
export type CreateKeyRequest = typeof CreateKeyRequest.Type

export const UpdateKeyRequest = Schema.Struct({
  plan: Schema.optionalKey(Plan),
  limits: Schema.optionalKey(QuotaLimits),
  role: Schema.optionalKey(KeyRole),
  expiresAt: Schema.optionalKey(Schema.NullOr(ExpiresAt).annotate({ description: "`null` makes the key never expire" }))
}).annotate({ description: "Only the fields sent change; the checks are those of a creation" })
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
  createdAt: Schema.String.annotate({ description: "ISO 8601 timestamp", examples: ["2026-11-27T09:30:00.000Z"] }),
  // Present only when set, as `role` is, so that clients reading views strictly keep working.
  expiresAt: Schema.optionalKey(Schema.String.annotate({
    description: "When the key stops working (ISO 8601), at most 366 days after it was set; absent: never",
    examples: ["2027-01-31T00:00:00.000Z"]
  })),
  previousKeyExpiresAt: Schema.optionalKey(Schema.String.annotate({
    description: "While a roll's overlap lasts: when the secret the key had before the roll stops working " +
      `(ISO 8601; at most ${MAX_ROLL_OVERLAP_SECONDS} seconds, 7 days, after the roll); absent: no overlap`,
    examples: ["2026-11-28T09:30:00.000Z"]
  })),
  lastUsedAt: Schema.optionalKey(Schema.String.annotate({
    description: "The key's last use (ISO 8601), exact to a minute: recorded at most once a minute per key and " +
      "server process; absent: never used",
    examples: ["2026-11-27T09:41:00.000Z"]
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

export const RollKeyRequest = Schema.Struct({
  overlapSeconds: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween({ minimum: 0, maximum: MAX_ROLL_OVERLAP_SECONDS }, {
        expected: `a whole number of seconds from 0 to ${MAX_ROLL_OVERLAP_SECONDS}`
      })
    ).annotate({
      description: "How long the secret before the roll keeps working, in whole seconds from 0 (it stops at " +
        `once) to ${MAX_ROLL_OVERLAP_SECONDS} (7 days); default ${DEFAULT_ROLL_OVERLAP_SECONDS} (one day)`,
      examples: [3600]
    })
  )
})
export type RollKeyRequest = typeof RollKeyRequest.Type

/** What an operator did through the admin API. */
export const AuditAction = Schema.Literals(["key.created", "key.updated", "key.rolled", "key.revoked", "key.unbanned"])
  .annotate({ identifier: "AuditAction" })
export type AuditAction = typeof AuditAction.Type

/** One change made through the admin API; never a secret. Kept `AUDIT_RETENTION_DAYS`, then purged. */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: Schema.String.annotate({ description: "Opaque; newer entries have greater ids" }),
  occurredAt: Schema.String.annotate({ description: "ISO 8601 timestamp", examples: ["2026-11-27T09:30:00.000Z"] }),
  action: AuditAction,
  keyId: ApiKeyId,
  changes: Schema.Record(Schema.String, Schema.Json).annotate({
    description: "What changed: for a change, each field's `from` and `to`; for a creation, the key's settings"
  }),
  clientAddress: Schema.String.annotate({
    description: "The address the admin call came from (as `TRUST_PROXY` finds it), or `unknown`",
    examples: ["127.0.0.1"]
  })
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

/** A key id as the document shows it: `ApiKeyId`'s pattern, which its `expected` message hides from the generator. */
const KeyIdValue = Schema.String.check(Schema.isPattern(/^key_[0-9a-z]{16}$/u)).annotate({
  examples: ["key_0123456789abcdef"]
})

/** The key an operation is about, in its path: `key_` and 16 lower-case letters or digits. */
const keyIdParameter = describeParameters({
  id: { value: KeyIdValue, description: "The key's id, as `POST /keys` returned it: `key_` then 16 of `[0-9a-z]`" }
})

const createKey = HttpApiEndpoint.post("createKey", "/keys", {
  payload: CreateKeyRequest,
  success: CreatedKey.pipe(HttpApiSchema.status(201)),
  error: [InvalidRequest, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "createKey",
  summary: "Issue an API key",
  description: "A new key on a plan, with an optional name, role and `expiresAt`. The answer's `key` is the secret: " +
    "shown this once, stored only as a hash. Recorded in the audit trail (`key.created`)."
}))

const listKeys = HttpApiEndpoint.get("listKeys", "/keys", {
  query: ListKeysQuery,
  success: Schema.Array(ApiKeyView),
  error: ServiceUnavailable
}).annotateMerge(OpenApi.annotations({
  identifier: "listKeys",
  summary: "List API keys",
  description: "Every live key (never a secret), or with `state=expired` the keys past their `expiresAt` that are " +
    "not purged yet (kept 30 days). Revoked keys are gone."
}))

const updateKey = HttpApiEndpoint.patch("updateKey", "/keys/:id", {
  params: keyParams,
  payload: UpdateKeyRequest,
  success: ApiKeyView,
  error: [NotFound, InvalidRequest, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "updateKey",
  summary: "Change a key's plan, limits, role or expiry",
  description: "Changes the fields sent, checked as on creation; `expiresAt: null` clears the expiry. The key keeps " +
    "its secret, quota windows and webhook endpoints. 404 for a key that is unknown, revoked or expired. Recorded " +
    "in the audit trail (`key.updated`, each field's `from` and `to`).",
  transform: keyIdParameter
}))

const revokeKey = HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
  params: keyParams,
  success: HttpApiSchema.NoContent,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "revokeKey",
  summary: "Revoke a key",
  description: "The key, and the secret before a roll if its overlap lasts, are 401 from now on, on every server " +
    "process. Recorded in the audit trail (`key.revoked`).",
  transform: keyIdParameter
}))

const rollKey = HttpApiEndpoint.post("rollKey", "/keys/:id/roll", {
  params: keyParams,
  payload: RollKeyRequest,
  success: CreatedKey,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "rollKey",
  summary: "Roll a key: a new secret, the old one working for an overlap",
  description: "A new secret (`key`, shown once) for the same key id, plan, role, quota windows and webhook " +
    "endpoints. The secret before keeps working for `overlapSeconds` (`previousKeyExpiresAt` in the answer), then " +
    "is 401. Rolling again during an overlap ends the older overlap at once: at most two secrets are live. " +
    "Recorded in the audit trail (`key.rolled`).",
  transform: keyIdParameter
}))

const keyUsage = HttpApiEndpoint.get("keyUsage", "/keys/:id/usage", {
  params: keyParams,
  success: KeyUsage,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "keyUsage",
  summary: "Show a key's quota windows and ban",
  description: "Both windows of the key (limit, used, remaining, reset) and its ban, if any. Reading spends no quota.",
  transform: keyIdParameter
}))

const unbanKey = HttpApiEndpoint.post("unbanKey", "/keys/:id/unban", {
  params: keyParams,
  success: HttpApiSchema.NoContent,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "unbanKey",
  summary: "Lift a key's ban",
  description: "Ends the key's ban for repeated quota abuse at once. Recorded in the audit trail (`key.unbanned`).",
  transform: keyIdParameter
}))

const keyWebhookEndpoints = HttpApiEndpoint.get("keyWebhookEndpoints", "/keys/:id/webhook-endpoints", {
  params: keyParams,
  success: Schema.Array(WebhookEndpoint),
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "keyWebhookEndpoints",
  summary: "List a key's webhook endpoints",
  description: "The key's endpoints as it sees them, never their secrets: whether each is enabled, and why not.",
  transform: keyIdParameter
}))

export class KeysGroup extends HttpApiGroup.make("keys")
  .add(createKey, listKeys, updateKey, revokeKey, rollKey, keyUsage, unbanKey, keyWebhookEndpoints)
  .middleware(RequestValidation)
  .middleware(AdminAuth)
  .annotate(OpenApi.Description, "API keys: issue, list, change, roll and revoke them; their quotas and bans")
{}

const auditParameters = describeParameters({
  keyId: { value: KeyIdValue, description: "Only the entries of this key" }
})

const listAudit = HttpApiEndpoint.get("listAudit", "/audit", {
  query: ListAuditQuery,
  success: HttpApiSchema.WithHeaders(Schema.Array(AuditEntry), {
    link: Schema.optionalKey(
      Schema.String.annotate({
        description: "`<url>; rel=\"next\"` when older entries follow",
        examples: ["</admin/audit?limit=20&cursor=YWZ0ZXI6MjA>; rel=\"next\""]
      })
    )
  }),
  error: [InvalidRequest, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "listAudit",
  summary: "Read the audit trail",
  description: "Every change made through the admin API, newest first, a page at a time (keyset pagination " +
    "through the `Link` header), filtered by key and by action. Each entry is written in the transaction of its " +
    `change, never holds a secret, and is kept ${AUDIT_RETENTION_DAYS} days.`,
  transform: (operation) => auditParameters(pageParameters("entries")(operation))
}))

export class AuditGroup extends HttpApiGroup.make("audit")
  .add(listAudit)
  .middleware(RequestValidation)
  .middleware(AdminAuth)
  .annotate(OpenApi.Description, "Who changed which key, when, and from where")
{}

/** The admin API's path prefix: its document's paths are relative to a server that ends in it. */
export const ADMIN_BASE_PATH = "/admin"

/** The operator's API, served only on the admin listener. */
export class AdminApi extends HttpApi.make("petstore-admin")
  .add(KeysGroup)
  .add(AuditGroup)
  .prefix(ADMIN_BASE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.AdditionalSchemas, [ErrorBody])
  .annotateMerge(OpenApi.annotations({
    title: "Animal Adoption Store Service: admin",
    version: "1.0.0",
    description: "The operator's API: API keys and the audit trail. Served only on the admin listener " +
      "(`ADMIN_HOST`:`ADMIN_PORT`, loopback by default), and only when `ADMIN_TOKEN` is set; every operation needs " +
      "`Authorization: Bearer <ADMIN_TOKEN>`. `pnpm keys` and the contract's `makeAdminClient` call it.",
    license: { name: "MIT", identifier: "MIT" },
    transform: (spec) =>
      describeAnswers({
        401: "The admin token is missing or wrong (an API key is not an admin token)",
        503: "The database is unavailable; retry after Retry-After"
      })(renameEncodedSchemas(
        documentApi({
          basePath: ADMIN_BASE_PATH,
          defaultServers: [{
            url: ADMIN_BASE_PATH,
            description: "This server's admin listener: the address this document was served from"
          }],
          errorSchema: "Error",
          headerNames,
          headers: adminResponseHeaders,
          absences: {},
          headersOf: adminHeadersOf
        })(spec)
      ))
  }))
{}
