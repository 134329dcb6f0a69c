import { betaStabilityHeader, getPetDeprecationHeaders, PetstoreApi } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { bearerChallenge } from "../auth/ApiKeyAuth.ts"
import { answerEveryFailure } from "./errors.ts"
import { routeTable } from "./routeTable.ts"

/** API answers are personal and typed: never cached by intermediaries, never sniffed as another type. */
const everyV1Answer = { "cache-control": "no-store", "x-content-type-options": "nosniff" }

const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

/** A 401 carries the challenge of its realm (RFC 6750), whichever route answered it. */
const challengeIfUnauthorized = (realm: string) => (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 401
    ? Effect.map(bearerCredential, (credential) =>
      HttpServerResponse.setHeader(response, "www-authenticate", bearerChallenge(realm, credential)))
    : Effect.succeed(response)

/**
 * Route middleware of every route under `/v1`, outermost: whatever failed
 * inside (quota admission included) gets the Error shape, and every answer the
 * headers that depend only on its route and status: caching and sniffing, the
 * deprecation of a deprecated operation, the stability of a beta one, the
 * challenge of a 401. The quota's
 * headers are quota admission's (quotaAdmission.ts).
 */
export const v1ResponseHeaders = Effect.map(routeTable(PetstoreApi), (table) =>
  <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    answerEveryFailure(httpEffect).pipe(
      Effect.flatMap(challengeIfUnauthorized("petstore")),
      Effect.flatMap((response) =>
        HttpRouter.RouteContext.useSync((context) => {
          const operation = table.matched(context)
          return HttpServerResponse.setHeaders(response, {
            ...everyV1Answer,
            ...(Option.exists(operation, ({ deprecated }) => deprecated) ? getPetDeprecationHeaders : {}),
            ...(Option.exists(operation, ({ beta }) => beta) ? betaStabilityHeader : {})
          })
        })
      )
    ))

/** Route middleware of the admin API: every failure gets the Error shape, every 401 (of the keys API and of /metrics) its challenge. */
export const adminResponseHeaders = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  answerEveryFailure(httpEffect).pipe(Effect.flatMap(challengeIfUnauthorized("petstore-admin")))
