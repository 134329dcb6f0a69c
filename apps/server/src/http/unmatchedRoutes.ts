import { MethodNotAllowed, NotFound } from "@petstore/contract"
import { Effect, Layer } from "effect"
import { type HttpMethod, HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { METHODS } from "node:http"
import { errorResponse } from "./errors.ts"
import { type ApiRoutes, hasEmptyParameter, routeTable } from "./routeTable.ts"

/** The path as sent, without its query. */
const requestPath = (request: HttpServerRequest.HttpServerRequest) => request.url.split("?")[0]!

/** The answer to a request that no operation matched. */
export const noOperation = (request: HttpServerRequest.HttpServerRequest) =>
  errorResponse(new NotFound({ message: `No operation at ${request.method} ${requestPath(request)}` }))

/**
 * Every method Node's parser accepts (TRACE and WebDAV's among them), so none
 * escapes the 405 and the /v1 edge, but HEAD, which falls through to GET as on
 * the API's own routes, and CONNECT, which Node never hands to the router. The
 * type names fewer methods than Node lets through; the router keys on the string.
 */
const unmatchedMethods = METHODS.filter((method) => method !== "HEAD" && method !== "CONNECT") as ReadonlyArray<
  HttpMethod.HttpMethod
>

/**
 * Answers the paths under `prefix` that no operation matched: 405 with `Allow`
 * when another method would match, else 404.
 */
export const unmatchedRoutes = (api: ApiRoutes, prefix: `/${string}`) =>
  Layer.unwrap(Effect.gen(function*() {
    const table = yield* routeTable(api)
    const answer = (request: HttpServerRequest.HttpServerRequest) => {
      const allow = table.allowedMethods(request.url)
      return Effect.succeed(
        allow.length > 0 && !allow.includes(request.method)
          ? errorResponse(
            new MethodNotAllowed({
              message: `${request.method} is not allowed on ${requestPath(request)}; use ${allow.join(", ")}`
            }),
            { allow: allow.join(", ") }
          )
          : noOperation(request)
      )
    }
    return HttpRouter.addAll(unmatchedMethods.map((method) => HttpRouter.route(method, `${prefix}/*`, answer)))
  }))

/** Route middleware: a path the router matched with an empty parameter is answered as the unknown path it is. */
export const emptyParameterIsUnknownPath = <E, R>(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  Effect.gen(function*() {
    const { params } = yield* HttpRouter.RouteContext
    return hasEmptyParameter(params) ? noOperation(yield* HttpServerRequest.HttpServerRequest) : yield* httpEffect
  })
