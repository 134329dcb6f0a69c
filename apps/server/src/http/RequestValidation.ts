import {
  type ErrorDetail,
  InvalidRequest,
  PayloadTooLarge,
  RequestValidation,
  UnsupportedMediaType
} from "@petstore/contract"
import { ByteSize, type Cause, Effect, Layer, SchemaAST, SchemaIssue } from "effect"
import { HttpIncomingMessage, HttpServerError, HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { causeHas } from "./errors.ts"

/** The largest request body the service reads. */
export const MAX_BODY_BYTES = 16 * 1024

const maxBodySize = ByteSize.bytes(MAX_BODY_BYTES)

const isJsonMediaType = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase() === "application/json"

/** A body is being sent when it has a length, or is chunked. */
const sendsBody = (headers: Readonly<Record<string, string | undefined>>) =>
  (headers["content-length"] !== undefined && headers["content-length"] !== "0") ||
  headers["transfer-encoding"] !== undefined

const checkContentType = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"]
  if (contentType === undefined ? sendsBody(request.headers) : !isJsonMediaType(contentType)) {
    return yield* new UnsupportedMediaType({
      message: `The request body must be sent as \`Content-Type: application/json\`, not ${
        contentType ?? "without a Content-Type"
      }`
    })
  }
})

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotNames: Record<HttpApiError.HttpApiSchemaError["kind"], string> = {
  Params: "path",
  Query: "query",
  Headers: "header",
  Payload: "body",
  Body: "response",
  ResponseHeaders: "response"
}

/** The values of a union of literals (an enum such as `PetStatus`), or undefined for any other union. */
const literalsOf = (ast: SchemaAST.Union): ReadonlyArray<string> | undefined =>
  ast.types.every(SchemaAST.isLiteral) ? ast.types.map((member) => String(member.literal)) : undefined

interface IssueLine {
  readonly path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>
  readonly message: string
}

/**
 * Every issue of a decode failure, as the formatter words it, except that a value outside an enum is told
 * the values it may take (`Expected one of available, pending, sold`): the formatter would only name the
 * enum's schema (`Expected PetStatus`), which a client cannot look up.
 */
const issueLines = (issue: SchemaIssue.Issue, path: IssueLine["path"] = []): Array<IssueLine> => {
  switch (issue._tag) {
    case "Pointer":
      return issueLines(issue.issue, [...path, ...issue.path])
    case "Encoding":
      return issueLines(issue.issue, path)
    case "Composite":
      return issue.issues.flatMap((inner) => issueLines(inner, path))
    case "AnyOf": {
      if (issue.issues.length > 0) return issue.issues.flatMap((inner) => issueLines(inner, path))
      const literals = issue.ast.annotations?.message === undefined ? literalsOf(issue.ast) : undefined
      if (literals !== undefined) return [{ path, message: `Expected one of ${literals.join(", ")}` }]
      break
    }
    default:
      // Worded by the formatter, below.
      break
  }
  return formatIssues(issue).issues.map((line) => ({ path: [...path, ...(line.path ?? [])], message: line.message }))
}

/** A decode failure of path, query, headers or body, as a 400 naming every offending field. */
const invalidRequestFrom = (error: HttpApiError.HttpApiSchemaError) => {
  const slot = slotNames[error.kind]
  const details: Array<ErrorDetail> = issueLines(error.cause.issue).map((issue) => ({
    path: [slot, ...issue.path.map((segment) => String(typeof segment === "object" ? segment.key : segment))]
      .join("."),
    message: issue.message
  }))
  const summary = details.map((detail) => `${detail.path}: ${detail.message}`).join("; ")
  return new InvalidRequest({ message: `Invalid request ${slot}. ${summary}`, details })
}

/** Decode failures arrive as the framework's HttpApiSchemaError; clients get a 400 that names each field. */
const schemaErrorToInvalidRequest = <E>(
  error: E
): Effect.Effect<never, Exclude<E, HttpApiError.HttpApiSchemaError> | InvalidRequest> =>
  Effect.fail(
    HttpApiError.HttpApiSchemaError.is(error)
      ? invalidRequestFrom(error)
      : error as Exclude<E, HttpApiError.HttpApiSchemaError>
  )

const isBodyTooLarge = (u: unknown) =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError" && u.reason.reason === "BodyTooLarge"

/**
 * Reading past the limit is a defect inside the framework's body reader;
 * clients get a 413. Only here: the limit is set here, so no body is read past
 * it anywhere else.
 */
const bodyTooLargeToPayloadTooLarge = <E>(cause: Cause.Cause<E>): Effect.Effect<never, E | PayloadTooLarge> =>
  causeHas(cause, isBodyTooLarge)
    ? Effect.fail(new PayloadTooLarge({ message: `The request body is over the limit of ${MAX_BODY_BYTES} bytes` }))
    : Effect.failCause(cause)

/**
 * Checks a request's shape before its handler runs and turns the framework's
 * own refusals (empty-bodied 400s, a plain-text 415) into documented errors.
 */
export const RequestValidationLive = Layer.succeed(
  RequestValidation,
  (httpEffect, { endpoint }) =>
    (endpoint.payload.size > 0 ? Effect.andThen(checkContentType, httpEffect) : httpEffect).pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, maxBodySize),
      Effect.catch(schemaErrorToInvalidRequest),
      Effect.catchCause(bodyTooLargeToPayloadTooLarge)
    )
)
