import { type ApiError, errorBodyOf, InternalError, NotFound, ServiceUnavailable } from "@petstore/contract"
import { Cause, Effect } from "effect"
import { HttpBody, HttpServerError, HttpServerResponse } from "effect/http"
import { DatabaseError } from "../db/DatabaseError.ts"
import { traced } from "../observability/spans.ts"

/** How long a client is asked to wait after a 503. */
export const SERVICE_UNAVAILABLE_RETRY_SECONDS = 5

/**
 * The one 503: the database is unavailable, whether an operation, the quota
 * store or the readiness check found out.
 */
export const databaseUnavailable = new ServiceUnavailable({
  message: "The database is unavailable; retry after the seconds in Retry-After"
})

/**
 * The one way an error becomes a response outside an operation (HttpApi
 * answers an operation's declared errors from the same `Error` schema): the
 * error's body at its status. Every 503 says when to come back, whoever
 * raised it, so that is said here.
 */
export const errorResponse = (error: ApiError, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(errorBodyOf(error), {
    status: error.status,
    headers: error instanceof ServiceUnavailable
      ? { ...headers, "retry-after": String(SERVICE_UNAVAILABLE_RETRY_SECONDS) }
      : headers
  })

/** Whether a failure or a defect of the cause satisfies the predicate: the framework raises some of each. */
export const causeHas = (cause: Cause.Cause<unknown>, predicate: (u: unknown) => boolean) =>
  cause.reasons.some((reason) =>
    (Cause.isFailReason(reason) && predicate(reason.error)) || (Cause.isDieReason(reason) && predicate(reason.defect))
  )

/**
 * The error a failure that nobody answered stands for. A database failure
 * reaches here from wherever it happened (handlers take their services
 * `withoutDatabaseError`, `databaseFailures.ts`): an unavailable database is the documented 503,
 * anything else a bug, logged and answered 500.
 */
const errorOfCause = Effect.fnUntraced(function*(cause: Cause.Cause<unknown>) {
  if (causeHas(cause, (u) => u instanceof DatabaseError && u.unavailable)) {
    yield* Effect.logWarning("database unavailable", cause)
    return databaseUnavailable
  }
  yield* Effect.logError("unhandled failure", cause)
  return new InternalError({ message: "The service failed to handle the request" })
}, traced("errorOfCause"))

export const renderCause = (cause: Cause.Cause<unknown>) =>
  Effect.map(errorOfCause(cause), (error) => errorResponse(error))

/** Whatever a route leaves unanswered (defects, outages) still gets the Error shape; an interrupted request gets nothing. */
export const answerEveryFailure = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchCause(
    httpEffect,
    (cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : renderCause(cause)
  )

const isRouteNotFound = (u: unknown) => HttpServerError.isHttpServerError(u) && u.reason._tag === "RouteNotFound"

/**
 * For what fails before any route runs: a path the router cannot match or
 * even decode (a malformed percent-escape) still gets the Error shape. A
 * request interrupted because its client went away is no failure of the
 * server: the request log has its 499 line, and nobody is left to answer.
 */
export const renderUnrouted = (cause: Cause.Cause<unknown>) =>
  Cause.hasInterruptsOnly(cause)
    ? Effect.failCause(cause)
    : causeHas(cause, isRouteNotFound)
    ? Effect.succeed(errorResponse(new NotFound({ message: "No operation at this path" })))
    : renderCause(cause)

/**
 * An error answer with its request's id in the body (`requestId`, the answer's `X-Request-Id`). Added here,
 * once every route and middleware has answered, rather than where each error is made: HttpApi encodes an
 * operation's declared errors itself, and this way no error answer of a listener goes without it.
 */
export const withRequestIdInErrorBody = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  const body = response.body
  if (response.status < 400 || body._tag !== "Uint8Array" || !body.contentType.startsWith("application/json")) {
    return response
  }
  const json: unknown = JSON.parse(body.text ?? new TextDecoder().decode(body.body))
  return isErrorBody(json, response.status)
    ? HttpServerResponse.setBody(response, HttpBody.jsonUnsafe({ ...json, requestId }, body.contentType))
    : response
}

const isErrorBody = (json: unknown, status: number): json is Record<string, unknown> =>
  typeof json === "object" && json !== null && "code" in json && (json as { status?: unknown }).status === status
