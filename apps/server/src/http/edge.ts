import { GET_PET_SUNSET } from "@petstore/contract"
import { Cause, Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse, renderCause } from "./errors.ts"
import { allowedMethods, type ApiRoutes, routeTable } from "./routeTable.ts"

/** Whatever a route leaves unanswered (defects, outages) still gets the Error shape. */
const answerEveryFailure = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchCause(httpEffect, (cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : renderCause(cause))

/** RFC 9745 `Deprecation` (the date it took effect) and RFC 8594 `Sunset`, with the successor. */
export const DEPRECATED_SINCE = new Date("2026-11-22T00:00:00Z")
const deprecationHeaders = {
  deprecation: `@${DEPRECATED_SINCE.getTime() / 1000}`,
  sunset: GET_PET_SUNSET.toUTCString(),
  link: "</v1/pets>; rel=\"successor-version\""
}

/**
 * Route middleware of every route under an API's prefix: errors nobody declared
 * get the Error shape, and responses of deprecated operations (errors included)
 * carry the deprecation headers.
 */
export const apiEdge = (api: ApiRoutes) => {
  const deprecated = new Set(routeTable(api).filter((route) => route.deprecated).map((route) => route.path))
  return HttpRouter.middleware<{ handles: unknown }>()((httpEffect) =>
    Effect.gen(function*() {
      const { route } = yield* HttpRouter.RouteContext
      const response = yield* answerEveryFailure(httpEffect)
      return deprecated.has(route.path) ? HttpServerResponse.setHeaders(response, deprecationHeaders) : response
    })
  ).layer
}

/** Answers the paths under `prefix` that no endpoint matched: 405 with `Allow` when another method would, else 404. */
export const unmatchedRoutes = (api: ApiRoutes, prefix: `/${string}`) => {
  const table = routeTable(api)
  return HttpRouter.add("*", `${prefix}/*`, (request: HttpServerRequest.HttpServerRequest) => {
    const path = new URL(request.url, "http://localhost").pathname
    const allow = allowedMethods(table, path)
    return Effect.succeed(
      allow.length > 0
        ? errorResponse(
          { code: "method_not_allowed", status: 405, message: `${request.method} is not allowed on ${path}; use ${allow.join(", ")}` },
          { allow: allow.join(", ") }
        )
        : errorResponse({ code: "not_found", status: 404, message: `No operation at ${request.method} ${path}` })
    )
  })
}
