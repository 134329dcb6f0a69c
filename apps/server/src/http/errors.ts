import { type ErrorBody, type ErrorDetail, InvalidRequest } from "@petstore/contract"
import { Cause, Effect, SchemaIssue } from "effect"
import { HttpServerError, HttpServerResponse } from "effect/http"
import type { HttpApiError } from "effect/http-api"
import { DatabaseError } from "../db/DatabaseError.ts"

/**
 * The one place a failure becomes an error response that no endpoint declared:
 * unmatched routes, defects, the database going away. Declared errors are
 * encoded by HttpApi with the same `{ code, message, status }` schema.
 */
export const errorResponse = (body: ErrorBody, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(body, { status: body.status, ...(headers ? { headers } : {}) })

/** How long a client is asked to wait after a 503. */
export const SERVICE_UNAVAILABLE_RETRY_SECONDS = 5

const isBodyTooLarge = (u: unknown) =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError" && u.reason.reason === "BodyTooLarge"

/** Whether a failure or a defect of the cause satisfies the predicate: the framework raises some of each. */
const causeHas = (cause: Cause.Cause<unknown>, predicate: (u: unknown) => boolean) =>
  cause.reasons.some((reason) =>
    (Cause.isFailReason(reason) && predicate(reason.error)) || (Cause.isDieReason(reason) && predicate(reason.defect))
  )

/** True when the request body went over the size limit while it was read. */
export const causeIsBodyTooLarge = (cause: Cause.Cause<unknown>) => causeHas(cause, isBodyTooLarge)

export const renderCause = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    if (causeIsBodyTooLarge(cause)) {
      return errorResponse({ code: "payload_too_large", status: 413, message: "The request body is over the limit" })
    }
    if (causeHas(cause, (u) => u instanceof DatabaseError && u.unavailable)) {
      yield* Effect.logWarning("database unavailable", cause)
      return errorResponse(
        { code: "service_unavailable", status: 503, message: "The service is temporarily unavailable" },
        { "retry-after": String(SERVICE_UNAVAILABLE_RETRY_SECONDS) }
      )
    }
    yield* Effect.logError("unhandled failure", cause)
    return errorResponse({ code: "internal_error", status: 500, message: "The service failed to handle the request" })
  })

const isRouteNotFound = (u: unknown) => HttpServerError.isHttpServerError(u) && u.reason._tag === "RouteNotFound"

/**
 * For what fails before any route runs: a path the router cannot match or
 * even decode (a malformed percent-escape) still gets the Error shape.
 */
export const renderUnrouted = (cause: Cause.Cause<unknown>) =>
  causeHas(cause, isRouteNotFound)
    ? Effect.succeed(errorResponse({ code: "not_found", status: 404, message: "No operation at this path" }))
    : renderCause(cause)

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotNames: Record<HttpApiError.HttpApiSchemaError["kind"], string> = {
  Params: "path",
  Query: "query",
  Headers: "header",
  Payload: "body",
  Body: "response",
  ResponseHeaders: "response"
}

/** A decode failure of path, query, headers or body, as a 400 naming every offending field. */
export const invalidRequestFrom = (error: HttpApiError.HttpApiSchemaError) => {
  const slot = slotNames[error.kind]
  const details: Array<ErrorDetail> = formatIssues(error.cause.issue).issues.map((issue) => ({
    path: [slot, ...(issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))]
      .join("."),
    message: issue.message
  }))
  const summary = details.map((detail) => `${detail.path}: ${detail.message}`).join("; ")
  return new InvalidRequest({ message: `Invalid request ${slot}. ${summary}`, details })
}
