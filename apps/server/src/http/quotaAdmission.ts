import { API_BASE_PATH, PetstoreApi, RateLimited } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { RequestCaller } from "../auth/ApiKeyAuth.ts"
import { ApiKeys } from "../auth/ApiKeys.ts"
import { AppConfig } from "../config.ts"
import { recordQuotaRefusal } from "../observability/metrics.ts"
import { Quota, type QuotaDecision, RequestQuota } from "../quota/Quota.ts"
import { answerEveryFailure, errorResponse } from "./errors.ts"
import { rateLimitHeaders, retryAfterSeconds } from "./rateLimitHeaders.ts"
import { CurrentRequestFacts } from "./requestLog.ts"
import { routeTable } from "./routeTable.ts"

/** `X-Forwarded-For` names the client only behind a proxy the operator trusts (`TRUST_PROXY`). */
const clientAddress = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean) => {
  const forwarded = trustProxy ? request.headers["x-forwarded-for"]?.split(",")[0]?.trim() : undefined
  return forwarded || Option.getOrElse(request.remoteAddress, () => "unknown")
}

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

/**
 * Route middleware of every route under `/v1`, unknown paths included: every
 * such request spends quota. It identifies the caller once (a key, or else the
 * client's address), spends its quota, refuses with 429 when none is left,
 * and puts the rate-limit headers on every answer, errors included.
 */
export const quotaAdmission = Effect.gen(function*() {
  const apiKeys = yield* ApiKeys
  const quota = yield* Quota
  const { trustProxy } = yield* AppConfig
  const table = yield* routeTable(PetstoreApi)
  const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

  return <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const operation = table.matched(yield* HttpRouter.RouteContext)
      const facts = yield* CurrentRequestFacts
      facts.route = Option.match(operation, { onNone: () => `${API_BASE_PATH}/*`, onSome: ({ path }) => path })
      const key = yield* apiKeys.authenticate(yield* bearerCredential)
      if (Option.isSome(key)) Object.assign(facts, { keyId: key.value.id, plan: key.value.plan })
      const subject = Option.match(key, {
        onSome: quota.keySubject,
        onNone: () => quota.addressSubject(clientAddress(request, trustProxy))
      })
      const costsNothing = Option.isSome(key) && Option.exists(operation, ({ costsNoQuota }) => costsNoQuota)
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
      const response = refused ? tooManyRequests(decision) : yield* httpEffect.pipe(
        Effect.provideService(RequestCaller, key),
        Effect.provideService(RequestQuota, Option.some(decision)),
        answerEveryFailure
      )
      return HttpServerResponse.setHeaders(response, rateLimitHeaders(decision))
    })
})
