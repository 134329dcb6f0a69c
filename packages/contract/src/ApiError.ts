import { Effect, Schema } from "effect"

/**
 * Every error the service answers has this body: `{ code, message, status }`,
 * plus `details` on a 400 that names each offending field.
 */
export const ErrorCode = Schema.Literals([
  "invalid_request",
  "unauthorized",
  "not_found",
  "method_not_allowed",
  "idempotency_key_in_flight",
  "idempotency_key_reused",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "api_key_banned",
  "service_unavailable",
  "internal_error"
])
export type ErrorCode = typeof ErrorCode.Type

export const ErrorDetail = Schema.Struct({
  path: Schema.String.annotate({
    description: "Where the problem is: the request part, then the field, e.g. body.name, query.limit, path.petId"
  }),
  message: Schema.String.annotate({ description: "What is wrong with it" })
}).annotate({ identifier: "ErrorDetail", description: "One offending field of a 400" })
export type ErrorDetail = typeof ErrorDetail.Type

/**
 * The one error schema of the OpenAPI document (spec §7), which every error
 * answer refers to. `code` is documented as an open string, not an enum, so
 * clients generated from this version keep decoding error bodies when a code
 * is added; the README's table lists them.
 */
export const ErrorBody = Schema.Struct({
  code: ErrorCode.pipe(Schema.encodeTo(Schema.String.annotate({
    description: "Machine-readable error code, e.g. invalid_request, unauthorized, not_found, rate_limited. " +
      "Treat codes you do not know by their status.",
    examples: ["not_found"]
  }))),
  message: Schema.String.annotate({ description: "Human-readable description", examples: ["No pet has id 42"] }),
  status: Schema.Int.check(Schema.isBetween({ minimum: 400, maximum: 599 })).annotate({
    description: "The HTTP status code of the answer",
    examples: [404]
  }),
  details: Schema.optionalKey(Schema.Array(ErrorDetail).annotate({
    description: "On a 400: every offending field at once"
  }))
}).annotate({ identifier: "Error", description: "The body of every error answer" })
export type ErrorBody = typeof ErrorBody.Type

/** `code` and `status` fill themselves in: `new NotFound({ message })`. */
const errorFields = <const Code extends ErrorCode, const Status extends number>(code: Code, status: Status) => ({
  code: Schema.Literal(code).pipe(Schema.withConstructorDefault(Effect.succeed(code))),
  message: Schema.String,
  status: Schema.Literal(status).pipe(Schema.withConstructorDefault(Effect.succeed(status)))
})

export class InvalidRequest extends Schema.Error<InvalidRequest>("InvalidRequest")(
  { ...errorFields("invalid_request", 400), details: Schema.optionalKey(Schema.Array(ErrorDetail)) },
  { httpApiStatus: 400, description: "The request is malformed: a missing or invalid field, parameter or body" }
) {}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(
  errorFields("unauthorized", 401),
  { httpApiStatus: 401, description: "The API key is missing, malformed, unknown or revoked" }
) {}

export class NotFound extends Schema.Error<NotFound>("NotFound")(
  errorFields("not_found", 404),
  { httpApiStatus: 404, description: "The requested resource does not exist" }
) {}

export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(
  errorFields("payload_too_large", 413),
  { httpApiStatus: 413, description: "The request body is larger than the service accepts" }
) {}

export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("UnsupportedMediaType")(
  errorFields("unsupported_media_type", 415),
  { httpApiStatus: 415, description: "The request body is not sent as application/json" }
) {}

export class RateLimited extends Schema.Error<RateLimited>("RateLimited")(
  { ...errorFields("rate_limited", 429), code: Schema.Literals(["rate_limited", "api_key_banned"]) },
  { httpApiStatus: 429, description: "A request quota is exhausted or the key is temporarily banned; see Retry-After" }
) {}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(
  errorFields("service_unavailable", 503),
  { httpApiStatus: 503, description: "A dependency of the service is unavailable; retry after Retry-After" }
) {}

export class IdempotencyKeyInFlight extends Schema.Error<IdempotencyKeyInFlight>("IdempotencyKeyInFlight")(
  errorFields("idempotency_key_in_flight", 409),
  { httpApiStatus: 409, description: "A request with this Idempotency-Key is still being processed; retry shortly" }
) {}

export class IdempotencyKeyReused extends Schema.Error<IdempotencyKeyReused>("IdempotencyKeyReused")(
  errorFields("idempotency_key_reused", 422),
  { httpApiStatus: 422, description: "This Idempotency-Key was used with a different request body" }
) {}
