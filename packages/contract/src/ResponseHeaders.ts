/**
 * The headers the server's edge puts on answers of the public API, beside
 * those a handler returns (`Location`, `Link` of a page, `Idempotent-Replayed`),
 * for the OpenAPI document (README "The API" and "Quotas").
 */
import { Schema } from "effect"
import type { DocumentedHeader, EdgeHeader } from "./OpenApiDocument.ts"
import { getPetDeprecationHeaders } from "./Versioning.ts"

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

export const responseHeaders = {
  "X-RateLimit-Limit": {
    schema: PositiveInt.annotate({ examples: [60] }),
    description:
      "Requests allowed in the window that binds first (the one with fewer requests left; on a tie, the minute)"
  },
  "X-RateLimit-Remaining": {
    schema: NonNegativeInt.annotate({ examples: [59] }),
    description: "Requests left in that window"
  },
  "X-RateLimit-Reset": {
    schema: NonNegativeInt.annotate({ examples: [1795305660] }),
    description: "Unix time, in seconds, at which that window resets"
  },
  "RateLimit-Policy": {
    schema: Schema.String.annotate({ examples: ["\"minute\";q=60;w=60, \"day\";q=1000;w=86400"] }),
    description: "Every window of the caller (IETF httpapi draft): its quota `q` and length `w` in seconds"
  },
  "RateLimit": {
    schema: Schema.String.annotate({ examples: ["\"minute\";r=59;t=42, \"day\";r=999;t=51342"] }),
    description: "Every window of the caller (IETF httpapi draft): requests left `r` and seconds to its reset `t`"
  },
  "Retry-After": {
    schema: PositiveInt.annotate({ examples: [42] }),
    description: "Whole seconds to wait before a request can be admitted"
  },
  "WWW-Authenticate": {
    schema: Schema.String.check(Schema.isPattern(/^Bearer realm="petstore"(?:, error="invalid_token")?$/u)).annotate({
      examples: ["Bearer realm=\"petstore\", error=\"invalid_token\""]
    }),
    description: "The bearer challenge (RFC 6750), with `error=\"invalid_token\"` when a key was sent and refused"
  },
  "Cache-Control": {
    schema: Schema.Literal("no-store"),
    description: "Answers are personal: never stored by caches"
  },
  "X-Content-Type-Options": {
    schema: Schema.Literal("nosniff"),
    description: "Never sniffed as another media type"
  },
  "X-Request-Id": {
    schema: Schema.String.check(Schema.isPattern(/^[A-Za-z0-9._:-]{1,128}$/u)).annotate({
      examples: ["3b0c44a2-27c1-4a33-8b5e-6f1d9b2c7e40"]
    }),
    description:
      "The request's id: the client's `X-Request-Id` when it is 1–128 characters of `[A-Za-z0-9._:-]`, else a new one"
  },
  "Deprecation": {
    schema: Schema.String.check(Schema.isPattern(/^@[0-9]+$/u)).annotate({
      examples: [getPetDeprecationHeaders.deprecation]
    }),
    description: "RFC 9745: the Unix time at which this operation was deprecated"
  },
  "Sunset": {
    schema: Schema.Literal(getPetDeprecationHeaders.sunset),
    description: "RFC 8594: when this operation will be removed"
  },
  "Link": {
    schema: Schema.Literal(getPetDeprecationHeaders.link),
    description: "The operation that replaces this one"
  },
  "Stability": {
    schema: Schema.Literal("beta"),
    description: "This operation is beta: fields may be added; a breaking change is announced in the changelog, " +
      "with `Deprecation` first"
  }
} satisfies Record<string, DocumentedHeader>

export type ResponseHeaderName = keyof typeof responseHeaders

/**
 * How long a browser may keep a preflight's answer: a change of `CORS_ALLOWED_ORIGINS` reaches every browser
 * within it (Chromium keeps one at most two hours whatever is said; ten minutes is below every cap).
 */
export const CORS_PREFLIGHT_MAX_AGE_SECONDS = 600

/**
 * What a page on another origin may read of an answer beyond the CORS-safelisted headers: every header the edge
 * documents but the two a page has no use for, and the operations' own.
 */
export const corsExposedHeaders = [
  ...Object.keys(responseHeaders).filter((name) => name !== "Cache-Control" && name !== "X-Content-Type-Options"),
  "Location",
  "ETag",
  "Idempotent-Replayed"
].join(", ")

/**
 * The CORS headers of an answer to a page whose origin `CORS_ALLOWED_ORIGINS` allows (README "Calling the API
 * from a browser (CORS)"). The preflight that precedes such a call is the browser's, not an operation: the
 * document's description says how it is answered.
 */
export const corsResponseHeaders = {
  "Access-Control-Allow-Origin": {
    schema: Schema.String.check(Schema.isPattern(/^(?:\*|[a-z][a-z0-9+.-]*:\/\/[^/\s]+)$/u)).annotate({
      examples: ["https://app.example.com"]
    }),
    description: "The request's `Origin`, or `*` when `CORS_ALLOWED_ORIGINS` is `*` (with a list of origins the " +
      "answer also carries `Vary: Origin`)"
  },
  "Access-Control-Expose-Headers": {
    schema: Schema.Literal(corsExposedHeaders),
    description: "The headers a page may read beyond the CORS-safelisted ones"
  }
} satisfies Record<string, DocumentedHeader>

/** Header names as the document spells them: the generator lower-cases those a handler returns. */
export const headerNames: Record<string, string> = {
  ...Object.fromEntries(
    [...Object.keys(responseHeaders), ...Object.keys(corsResponseHeaders)].map((name) => [name.toLowerCase(), name])
  ),
  location: "Location",
  "idempotent-replayed": "Idempotent-Replayed",
  "idempotency-key": "Idempotency-Key",
  etag: "ETag",
  "if-match": "If-Match"
}

const everyAnswer: ReadonlyArray<ResponseHeaderName> = ["Cache-Control", "X-Content-Type-Options", "X-Request-Id"]
const rateLimits: ReadonlyArray<ResponseHeaderName> = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "RateLimit-Policy",
  "RateLimit"
]

/**
 * When an answer may lack a header (README "Errors" and "Quotas"), for the
 * OpenAPI document. Answers given before any route lack the headers the routes
 * add: they spend no quota, so they carry no rate-limit headers either.
 */
export const headerAbsences = {
  beforeAnyRoute: "on an answer given before any route: a 400 to a request that is not valid HTTP (Node's parser " +
    "refuses it) or whose request target or `Host` is malformed, a 404 to a path holding `;`",
  databaseAway: "when the database did not answer before the request's quota was decided",
  originNotAllowed: "unless the request's `Origin` is one that `CORS_ALLOWED_ORIGINS` allows (unset by default: " +
    "no CORS header at all), and on an answer given before any route"
}

const corsHeaderNames = Object.keys(corsResponseHeaders)

/** The statuses of the answers given before any route. */
const beforeAnyRoute = new Set([400, 404])

/**
 * The edge's headers on an answer of an operation (`operation` as the
 * document has it: a beta one's answers carry `Stability`). A 503 may come from the
 * quota store itself, so its rate-limit headers are not promised: the spec's
 * "on every response" has this one exception, recorded among the README's
 * decisions. Without the database the server knows neither the caller's
 * remaining quota nor, for sure, its key; it sends `Retry-After` instead of
 * headers it would have to guess. Answers given before any route lack the
 * routes' headers (`headerAbsences`); every answer has `everyAnswer`.
 */
export const headersOf = (
  operationId: string,
  status: number,
  operation: { readonly "x-stability"?: unknown } = {}
): ReadonlyArray<EdgeHeader> => {
  const routes = (names: ReadonlyArray<ResponseHeaderName>): ReadonlyArray<EdgeHeader> =>
    beforeAnyRoute.has(status) ? names.map((name) => ({ name, absentWhen: "beforeAnyRoute" })) : names
  const quota: ReadonlyArray<EdgeHeader> = status === 503
    ? rateLimits.map((name) => ({ name, absentWhen: "databaseAway" }))
    : routes(rateLimits)
  return [
    ...everyAnswer,
    ...quota,
    ...(status === 429 || status === 503 ? ["Retry-After" as const] : []),
    ...(status === 401 ? ["WWW-Authenticate" as const] : []),
    ...(operationId === "getPet" ? routes(["Deprecation", "Sunset", "Link"]) : []),
    ...(operation["x-stability"] === "beta" ? routes(["Stability"]) : []),
    ...corsHeaderNames.map((name) => ({ name, absentWhen: "originNotAllowed" }))
  ]
}

/**
 * The headers the admin listener's edge puts on answers of the admin API (README "Admin API"), for its OpenAPI
 * document: the request id on every answer (the request log's), a 503's `Retry-After`, and a 401's challenge, in the admin realm. The
 * admin API spends no quota and answers no browser, so it has neither rate-limit nor CORS headers.
 */
export const adminResponseHeaders = {
  "X-Request-Id": responseHeaders["X-Request-Id"],
  "Retry-After": responseHeaders["Retry-After"],
  "WWW-Authenticate": {
    schema: Schema.String.check(Schema.isPattern(/^Bearer realm="petstore-admin"(?:, error="invalid_token")?$/u))
      .annotate({ examples: ["Bearer realm=\"petstore-admin\", error=\"invalid_token\""] }),
    description: "The bearer challenge (RFC 6750), with `error=\"invalid_token\"` when a token was sent and refused"
  }
} satisfies Record<string, DocumentedHeader>

/** The admin edge's headers on an answer of an admin operation, by its status (a 503: the database is away). */
export const adminHeadersOf = (_operationId: string, status: number): ReadonlyArray<EdgeHeader> => [
  "X-Request-Id",
  ...(status === 401 ? ["WWW-Authenticate"] : []),
  ...(status === 503 ? ["Retry-After"] : [])
]
