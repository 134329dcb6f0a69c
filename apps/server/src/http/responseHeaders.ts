import { betaStabilityHeader, getPetDeprecationHeaders, PetstoreApi } from "@petstore/contract"
import { Context, Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { bearerChallenge } from "./ApiKeyAuth.ts"
import { answerEveryFailure } from "./errors.ts"
import { routeTable } from "./routeTable.ts"

/** API answers are personal and typed: never cached by intermediaries, never sniffed as another type. */
export const everyV1Answer = { "cache-control": "no-store", "x-content-type-options": "nosniff" }

const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

/** A 401 carries the challenge of its realm (RFC 6750), whichever route answered it. */
const challengeIfUnauthorized = (realm: string) => (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 401
    ? Effect.map(
      bearerCredential,
      (credential) => HttpServerResponse.setHeader(response, "www-authenticate", bearerChallenge(realm, credential))
    )
    : Effect.succeed(response)

/**
 * Route middleware of every route under `/v1`, outermost: whatever failed
 * inside (quota admission included) gets the Error shape, and every answer the
 * headers that depend only on its route and status: caching and sniffing, the
 * deprecation of a deprecated operation, the stability of a beta one, the
 * challenge of a 401. The quota's headers are quota admission's
 * (quotaAdmission.ts). The sets of headers a route can get are made once, not per request.
 */
export const v1ResponseHeaders = Effect.map(routeTable(PetstoreApi), (table) => {
  const deprecatedAnswer = { ...everyV1Answer, ...getPetDeprecationHeaders }
  const betaAnswer = { ...everyV1Answer, ...betaStabilityHeader }
  const challenge = challengeIfUnauthorized("petstore")
  // The route (and so the headers) is known before it runs: one look at the fiber, and a plain map of the answer.
  return <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.withFiber((fiber) => {
      const operation = table.matched(Context.getUnsafe(fiber.context, HttpRouter.RouteContext))
      const headers = Option.isNone(operation)
        ? everyV1Answer
        : operation.value.deprecated
        ? deprecatedAnswer
        : operation.value.beta
        ? betaAnswer
        : everyV1Answer
      return Effect.flatMap(answerEveryFailure(httpEffect), (response) =>
        response.status === 401
          ? Effect.map(challenge(response), (challenged) => HttpServerResponse.setHeaders(challenged, headers))
          : Effect.succeed(HttpServerResponse.setHeaders(response, headers)))
    })
})

/** Route middleware of the admin API: every failure gets the Error shape, every 401 (of the keys API and of /metrics) its challenge. */
export const adminResponseHeaders = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  answerEveryFailure(httpEffect).pipe(Effect.flatMap(challengeIfUnauthorized("petstore-admin")))
