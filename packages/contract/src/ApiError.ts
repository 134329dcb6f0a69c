import { Effect, Schema } from "effect"

/**
 * Every error code the service answers with, and the HTTP status it goes with:
 * the one statement of the README's error table. The error classes below take
 * their status from it; tests and the conformance suite read it from here.
 */
export const errorStatusByCode = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_key_in_flight: 409,
  pet_not_available: 409,
  pet_has_open_order: 409,
  invalid_transition: 409,
  precondition_failed: 412,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  api_key_banned: 429,
  service_unavailable: 503,
  internal_error: 500
} as const

/**
 * Every error the service answers has this body: `{ code, message, status }`,
 * plus `details` on a 400 that names each offending field.
 */
export const ErrorCode = Schema.Literals(Object.keys(errorStatusByCode) as Array<keyof typeof errorStatusByCode>)
export type ErrorCode = typeof ErrorCode.Type

export const ErrorDetail = Schema.Struct({
  path: Schema.String.annotate({
    description: "Where the problem is: the request part, then the field, e.g. body.name, query.limit, path.petId",
    examples: ["body.name"]
  }),
  message: Schema.String.annotate({
    description: "What is wrong with it",
    examples: ["Expected a name of 1 to 100 characters"]
  })
}).annotate({ identifier: "ErrorDetail", description: "One offending field of a 400" })
export type ErrorDetail = typeof ErrorDetail.Type

/**
 * The answer's `X-Request-Id`, repeated in an error body so that an error pasted into a support ticket
 * carries what an operator looks the request up by. Optional in the schema only: the server always sends
 * it, but the spec's body is the three fields, and a body without it still decodes.
 */
const RequestId = Schema.String.annotate({
  description: "The answer's X-Request-Id, for a support request: the id the server logged the request under",
  examples: ["3f1c2a9e-5d4b-4f7a-9c1e-2b6d8a0f4e71"]
})

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
  details: Schema.optionalKey(
    Schema.Array(ErrorDetail).annotate({
      description: "On a 400: every offending field at once"
    })
  ),
  requestId: Schema.optionalKey(RequestId)
}).annotate({ identifier: "Error", description: "The body of every error answer" })
export type ErrorBody = typeof ErrorBody.Type

/**
 * `_tag`, `code` and `status` fill themselves in: `new NotFound({ message })`.
 * The status is the table's; `Status` only names it for the type (it cannot be
 * inferred through the lookup).
 *
 * `_tag` is the class's name, so that `Effect.catchTag("NotFound", …)` picks an
 * error out. It is no part of the wire: the body stays `{ code, message,
 * status }`, so encoding leaves `_tag` out and decoding fills it in.
 */
const errorFields = <
  const Tag extends string,
  const Code extends ErrorCode,
  const Status extends number = (typeof errorStatusByCode)[Code]
>(tag: Tag, code: Code) => {
  const status = errorStatusByCode[code] as number as Status
  return {
    _tag: Schema.tagDefaultOmit(tag),
    code: Schema.Literal(code).pipe(Schema.withConstructorDefault(Effect.succeed(code))),
    message: Schema.String,
    status: Schema.Literal(status).pipe(Schema.withConstructorDefault(Effect.succeed(status))),
    requestId: Schema.optionalKey(Schema.String)
  }
}

export class InvalidRequest extends Schema.Error<InvalidRequest>("InvalidRequest")(
  { ...errorFields("InvalidRequest", "invalid_request"), details: Schema.optionalKey(Schema.Array(ErrorDetail)) },
  {
    httpApiStatus: errorStatusByCode.invalid_request,
    description: "The request is malformed: a missing or invalid field, parameter or body"
  }
) {}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(
  errorFields("Unauthorized", "unauthorized"),
  {
    httpApiStatus: errorStatusByCode.unauthorized,
    description: "The API key is missing, malformed, unknown or revoked"
  }
) {}

export class NotFound extends Schema.Error<NotFound>("NotFound")(
  errorFields("NotFound", "not_found"),
  { httpApiStatus: errorStatusByCode.not_found, description: "The requested resource does not exist" }
) {}

/** Answered by the server's routing, not by an operation: no operation of the contract declares it. */
export class MethodNotAllowed extends Schema.Error<MethodNotAllowed>("MethodNotAllowed")(
  errorFields("MethodNotAllowed", "method_not_allowed"),
  {
    httpApiStatus: errorStatusByCode.method_not_allowed,
    description: "The path exists, but not with this method; see Allow"
  }
) {}

export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(
  errorFields("PayloadTooLarge", "payload_too_large"),
  {
    httpApiStatus: errorStatusByCode.payload_too_large,
    description: "The request body is larger than the service accepts"
  }
) {}

export class UnsupportedMediaType extends Schema.Error<UnsupportedMediaType>("UnsupportedMediaType")(
  errorFields("UnsupportedMediaType", "unsupported_media_type"),
  {
    httpApiStatus: errorStatusByCode.unsupported_media_type,
    description: "The request body is not sent as application/json"
  }
) {}

export class RateLimited extends Schema.Error<RateLimited>("RateLimited")(
  { ...errorFields("RateLimited", "rate_limited"), code: Schema.Literals(["rate_limited", "api_key_banned"]) },
  {
    httpApiStatus: errorStatusByCode.rate_limited,
    description: "A request quota is exhausted or the key is temporarily banned; see Retry-After"
  }
) {}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(
  errorFields("ServiceUnavailable", "service_unavailable"),
  {
    httpApiStatus: errorStatusByCode.service_unavailable,
    description: "A dependency of the service is unavailable; retry after Retry-After"
  }
) {}

/** A bug, answered without detail (the server logs it). No operation declares it. */
export class InternalError extends Schema.Error<InternalError>("InternalError")(
  errorFields("InternalError", "internal_error"),
  { httpApiStatus: errorStatusByCode.internal_error, description: "The service failed to handle the request" }
) {}

export class IdempotencyKeyInFlight extends Schema.Error<IdempotencyKeyInFlight>("IdempotencyKeyInFlight")(
  errorFields("IdempotencyKeyInFlight", "idempotency_key_in_flight"),
  {
    httpApiStatus: errorStatusByCode.idempotency_key_in_flight,
    description: "A request with this Idempotency-Key is still being processed; retry shortly"
  }
) {}

export class IdempotencyKeyReused extends Schema.Error<IdempotencyKeyReused>("IdempotencyKeyReused")(
  errorFields("IdempotencyKeyReused", "idempotency_key_reused"),
  {
    httpApiStatus: errorStatusByCode.idempotency_key_reused,
    description: "This Idempotency-Key was used with a different request body"
  }
) {}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(
  errorFields("Forbidden", "forbidden"),
  {
    httpApiStatus: errorStatusByCode.forbidden,
    description: "The API key's role may not do this (it needs a staff key)"
  }
) {}

export class PreconditionFailed extends Schema.Error<PreconditionFailed>("PreconditionFailed")(
  errorFields("PreconditionFailed", "precondition_failed"),
  {
    httpApiStatus: errorStatusByCode.precondition_failed,
    description: "If-Match names none of the resource's current ETag: it changed since it was read (RFC 9110)"
  }
) {}

export class PetNotAvailable extends Schema.Error<PetNotAvailable>("PetNotAvailable")(
  errorFields("PetNotAvailable", "pet_not_available"),
  {
    httpApiStatus: errorStatusByCode.pet_not_available,
    description: "The pet is not `available`: it is pending or sold"
  }
) {}

export class PetHasOpenOrder extends Schema.Error<PetHasOpenOrder>("PetHasOpenOrder")(
  errorFields("PetHasOpenOrder", "pet_has_open_order"),
  {
    httpApiStatus: errorStatusByCode.pet_has_open_order,
    description: "The pet has an open (placed) order: cancel or deliver it first"
  }
) {}

export class InvalidTransition extends Schema.Error<InvalidTransition>("InvalidTransition")(
  errorFields("InvalidTransition", "invalid_transition"),
  {
    httpApiStatus: errorStatusByCode.invalid_transition,
    description: "The order is not `placed`, so it cannot move; the message names its current status"
  }
) {}

/** Every error the service answers, each a class of its own. */
export type ApiError =
  | InvalidRequest
  | Unauthorized
  | NotFound
  | MethodNotAllowed
  | PayloadTooLarge
  | UnsupportedMediaType
  | RateLimited
  | ServiceUnavailable
  | InternalError
  | IdempotencyKeyInFlight
  | IdempotencyKeyReused
  | Forbidden
  | PreconditionFailed
  | PetNotAvailable
  | PetHasOpenOrder
  | InvalidTransition

/**
 * An error's body as the wire carries it, encoded by the one `Error` schema:
 * the body HttpApi writes for a declared error, for whatever answers an error
 * outside an operation.
 */
export const errorBodyOf: (error: ApiError) => typeof ErrorBody.Encoded = Schema.encodeSync(ErrorBody)
