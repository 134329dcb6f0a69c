import { CORS_PREFLIGHT_MAX_AGE_SECONDS, corsExposedHeaders, PetstoreApi } from "@petstore/contract"
import { Context, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../config.ts"
import { type AllowedOrigins, isAllowedOrigin } from "../net/corsOrigins.ts"
import { CurrentRequestFacts } from "./requestLog.ts"
import { everyV1Answer } from "./responseHeaders.ts"
import { routeTable } from "./routeTable.ts"

const allowOriginOf = (allowed: AllowedOrigins, origin: string) => allowed._tag === "Any" ? "*" : origin

/**
 * Route middleware of every route under `/v1`, outermost (docs/security.md, "Calling the API from a browser (CORS)").
 * A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered here, before quota
 * admission and authentication, which a browser's preflight cannot pass (it carries no key): 204, with the
 * route's methods and request headers when its origin is allowed, and with no CORS header otherwise, so the
 * browser refuses the request it was asking about. Either way it spends no quota. Every other answer to an
 * allowed origin says so and exposes the headers a client reads; to any other origin nothing changes.
 */
export const cors = Effect.gen(function*() {
  const allowed = (yield* AppConfig).corsAllowedOrigins
  const table = yield* routeTable(PetstoreApi)
  // With a list the answer depends on the Origin; with `*` or none it does not.
  const vary = allowed._tag === "Listed" ? { vary: "Origin" } : {}

  const preflight = (request: HttpServerRequest.HttpServerRequest, origin: string) => {
    const operations = table.operationsAt(request.url)
    if (!isAllowedOrigin(allowed, origin) || operations.length === 0) {
      return HttpServerResponse.empty({ status: 204, headers: { ...everyV1Answer, ...vary } })
    }
    const methods = table.allowedMethods(request.url)
    const headers = [...new Set(["x-request-id", ...operations.flatMap((operation) => operation.requestHeaders)])]
    return HttpServerResponse.empty({
      status: 204,
      headers: {
        ...everyV1Answer,
        "access-control-allow-origin": allowOriginOf(allowed, origin),
        "access-control-allow-methods": methods.join(", "),
        "access-control-allow-headers": headers.join(", "),
        "access-control-max-age": String(CORS_PREFLIGHT_MAX_AGE_SECONDS),
        vary: "Origin"
      }
    })
  }

  return <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.withFiber<HttpServerResponse.HttpServerResponse, E, R>((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const origin = request.headers["origin"]
      if (origin === undefined) return httpEffect
      if (request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined) {
        Context.get(fiber.context, CurrentRequestFacts).quota = "not_spent"
        return Effect.succeed(preflight(request, origin))
      }
      if (!isAllowedOrigin(allowed, origin)) return httpEffect
      return Effect.map(httpEffect, (response) =>
        HttpServerResponse.setHeaders(response, {
          "access-control-allow-origin": allowOriginOf(allowed, origin),
          "access-control-expose-headers": corsExposedHeaders,
          ...vary
        }))
    })
})
