import { CostsNoQuota, getPetDeprecationHeaders, MethodNotAllowed, NotFound, PetstoreApi, RateLimited } from "@petstore/contract"
import { Context, Effect, Option } from "effect"
import { type HttpMethod, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { METHODS } from "node:http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { bearerChallenge, RequestCaller } from "../auth/ApiKeyAuth.ts"
import { ApiKeys } from "../auth/ApiKeys.ts"
import { AppConfig } from "../config.ts"
import { Quota, type QuotaDecision, RequestQuota } from "../quota/Quota.ts"
import { answerEveryFailure, errorResponse } from "./errors.ts"
import { rateLimitHeaders, retryAfterSeconds } from "./rateLimitHeaders.ts"
import { CurrentRequestFacts } from "./requestLog.ts"
import { recordQuotaRefusal } from "../observability/metrics.ts"
import { allowedMethods, type ApiRoutes, routeTable } from "./routeTable.ts"

/** API answers are personal and typed: never cached by intermediaries, never sniffed as another type. */
const v1ResponseHeaders = { "cache-control": "no-store", "x-content-type-options": "nosniff" }

const tooManyRequests = (decision: QuotaDecision) =>
  errorResponse(
    Option.isSome(decision.bannedUntil)
      ? new RateLimited({
        code: "api_key_banned",
        message: "This API key kept sending while rate limited and is banned for a while; honour Retry-After"
      })
      : new RateLimited({ code: "rate_limited", message: "Rate limit exceeded; retry after the number of seconds in Retry-After" }),
    { "retry-after": String(retryAfterSeconds(decision)) }
  )

/** The path as sent, without its query. */
const requestPath = (request: HttpServerRequest.HttpServerRequest) => request.url.split("?")[0]!

const noOperation = (request: HttpServerRequest.HttpServerRequest) =>
  errorResponse(new NotFound({ message: `No operation at ${request.method} ${requestPath(request)}` }))

/**
 * The router gives a parameter an empty segment (`/v1/pets/` matches
 * `/v1/pets/:petId`), but the contract has no such path: it is answered as an
 * unknown path, not as an invalid parameter.
 */
const emptyParameter = (params: Readonly<Record<string, string | undefined>>) =>
  Object.entries(params).some(([name, value]) => name !== "*" && value === "")

/** `X-Forwarded-For` names the client only behind a proxy the operator trusts (`TRUST_PROXY`). */
const clientAddress = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean) => {
  const forwarded = trustProxy ? request.headers["x-forwarded-for"]?.split(",")[0]?.trim() : undefined
  return forwarded || Option.getOrElse(request.remoteAddress, () => "unknown")
}

/**
 * Route middleware of every route under `/v1`. It identifies the caller once
 * (a key, or else the client's address), spends its quota, refuses with 429
 * when none is left, and puts the rate-limit headers on every response, errors
 * included. Responses of deprecated operations carry the deprecation headers.
 */
export const v1Edge = HttpRouter.middleware<{ handles: unknown }>()(Effect.gen(function*() {
  const apiKeys = yield* ApiKeys
  const quota = yield* Quota
  const { trustProxy } = yield* AppConfig
  const routes = routeTable(PetstoreApi)
  const deprecated = new Set(routes.filter((route) => route.deprecated).map((route) => route.path))
  const free = new Set(
    routes.filter((route) => Context.getOrUndefined(route.annotations, CostsNoQuota) === true).map((route) => route.path)
  )
  const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

  return (httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { params, route } = yield* HttpRouter.RouteContext
      const unknownPath = emptyParameter(params)
      const facts = yield* CurrentRequestFacts
      facts.route = unknownPath ? "/v1/*" : route.path
      const credential = yield* bearerCredential
      const key = yield* apiKeys.authenticate(credential)
      if (Option.isSome(key)) Object.assign(facts, { keyId: key.value.id, plan: key.value.plan })
      const subject = Option.match(key, {
        onSome: quota.keySubject,
        onNone: () => quota.addressSubject(clientAddress(request, trustProxy))
      })
      const costsNothing = Option.isSome(key) && !unknownPath && free.has(route.path)
      const decision = yield* (costsNothing ? quota.peek(subject) : quota.admit(subject))
      const refused = costsNothing ? Option.isSome(decision.bannedUntil) : !decision.admitted
      facts.quota = Option.isSome(decision.bannedUntil)
        ? "banned"
        : refused
        ? "limited"
        : costsNothing
        ? "not_spent"
        : "admitted"
      if (refused) {
        yield* recordQuotaRefusal(
          Option.match(key, { onNone: () => "anonymous", onSome: (key) => key.plan }),
          Option.isSome(decision.bannedUntil) ? "api_key_banned" : "rate_limited"
        )
      }
      const response = refused ? tooManyRequests(decision) : yield* (unknownPath ? Effect.succeed(noOperation(request)) : httpEffect).pipe(
        Effect.provideService(RequestCaller, key),
        Effect.provideService(RequestQuota, Option.some(decision)),
        answerEveryFailure
      )
      return HttpServerResponse.setHeaders(response, {
        ...rateLimitHeaders(decision),
        ...(response.status === 401 ? { "www-authenticate": bearerChallenge("petstore", credential) } : {})
      })
    }).pipe(
      answerEveryFailure,
      Effect.flatMap((response) =>
        HttpRouter.RouteContext.useSync(({ params, route }) =>
          HttpServerResponse.setHeaders(response, {
            ...v1ResponseHeaders,
            ...(deprecated.has(route.path) && !emptyParameter(params) ? getPetDeprecationHeaders : {})
          })
        )
      )
    )
})).layer

const adminCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

/**
 * Route middleware of the admin API: errors nobody declared still get the
 * Error shape, and every 401 (of the keys API and of /metrics) its challenge.
 */
export const adminEdge = HttpRouter.middleware<{ handles: unknown }>()((httpEffect) =>
  Effect.flatMap(
    HttpRouter.RouteContext,
    ({ params }) => emptyParameter(params) ? HttpServerRequest.HttpServerRequest.useSync(noOperation) : answerEveryFailure(httpEffect)
  ).pipe(
    Effect.flatMap((response) =>
      response.status === 401
        ? Effect.map(adminCredential, (credential) =>
          HttpServerResponse.setHeader(response, "www-authenticate", bearerChallenge("petstore-admin", credential)))
        : Effect.succeed(response)
    )
  )
).layer

/**
 * Every method Node's parser accepts (TRACE and WebDAV's among them), so none
 * escapes the 405 and the /v1 edge, but HEAD, which falls through to GET as on
 * the API's own routes, and CONNECT, which Node never hands to the router. The
 * type names fewer methods than Node lets through; the router keys on the string.
 */
const unmatchedMethods = METHODS.filter((method) => method !== "HEAD" && method !== "CONNECT") as ReadonlyArray<HttpMethod.HttpMethod>

/**
 * Answers the paths under `prefix` that no endpoint matched: 405 with `Allow`
 * when another method would match, else 404. The path is taken as sent, so it
 * is judged exactly as the router judged it.
 */
export const unmatchedRoutes = (api: ApiRoutes, prefix: `/${string}`) => {
  const table = routeTable(api)
  const answer = (request: HttpServerRequest.HttpServerRequest) => {
    const path = requestPath(request)
    const allow = allowedMethods(table, path)
    return Effect.succeed(
      allow.length > 0 && !allow.includes(request.method)
        ? errorResponse(
          new MethodNotAllowed({ message: `${request.method} is not allowed on ${path}; use ${allow.join(", ")}` }),
          { allow: allow.join(", ") }
        )
        : noOperation(request)
    )
  }
  return HttpRouter.addAll(unmatchedMethods.map((method) => HttpRouter.route(method, `${prefix}/*`, answer)))
}
