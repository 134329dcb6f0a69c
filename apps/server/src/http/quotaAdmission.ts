import { API_BASE_PATH, PetstoreApi, RateLimited } from "@petstore/contract"
import { Context, Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { type ApiKey, ApiKeys } from "../auth/ApiKeys.ts"
import { AppConfig } from "../config.ts"
import { anonymousQuotaSubject } from "../net/ipAddress.ts"
import { clientAddress, type ProxyTrust } from "../net/proxyTrust.ts"
import { recordQuotaRefusal } from "../observability/metrics.ts"
import { traced } from "../observability/spans.ts"
import { Quota, type QuotaDecision } from "../quota/Quota.ts"
import { answerEveryFailure, errorResponse } from "./errors.ts"
import { rateLimitHeaders } from "./rateLimitHeaders.ts"
import type { Admission } from "./admission.ts"
import { CurrentRequestFacts, type RequestFacts } from "./requestLog.ts"
import { type Operation, routeTable } from "./routeTable.ts"

/**
 * Whom a request without a key is counted against: its client's address as
 * the proxy trust model (`TRUST_PROXY`) finds it, an IPv6 client by its /64.
 */
/** `TRUST_PROXY`, read by the configuration. */
export const configuredProxyTrust = Effect.map(AppConfig, (config) => config.trustProxy)

export const anonymousSubjectOf = (request: HttpServerRequest.HttpServerRequest, trust: ProxyTrust) =>
  Option.match(clientAddress(trust, request.headers["x-forwarded-for"], request.remoteAddress), {
    onNone: () => "unknown",
    onSome: anonymousQuotaSubject
  })

/** Why a request over its quota is refused: a ban, or a spent window. */
const rateLimited = (decision: QuotaDecision) =>
  Option.isSome(decision.bannedUntil)
    ? new RateLimited({
      code: "api_key_banned",
      message: "This API key kept sending while rate limited and is banned for a while; honour Retry-After"
    })
    : new RateLimited({
      code: "rate_limited",
      message: "Rate limit exceeded; retry after the number of seconds in Retry-After"
    })

/**
 * What quota admission decided for the current `/v1` request. The caller is
 * identified here, outside any operation, because every request under `/v1`
 * spends quota, unknown paths included; `ApiKeyAuth` then only judges the caller.
 */
/**
 * The current request's admission, for `ApiKeyAuth` and the handlers that
 * report quota. HttpApi builds an operation's services once, with its routes,
 * so an operation cannot require a per-request service in its type; every
 * route under `/v1` runs inside quota admission, so its absence is a wiring bug.
 * It is carried in the request's facts (requestLog.ts) rather than provided as a
 * service of its own: a request's ninth service made the fiber copy its whole
 * context (some thirty services), about 3 KiB a request (bench/RESULTS.md, "Issue 35").
 */
export const currentAdmission = Effect.flatMap(
  CurrentRequestFacts,
  (facts) =>
    facts.admission === undefined
      ? Effect.die(new Error("No quota admission: a /v1 route runs outside quotaAdmission"))
      : Effect.succeed(facts.admission)
)

/**
 * Route middleware of every route under `/v1`, unknown paths included: every
 * such request spends quota. It identifies the caller once (a key, or else the
 * client's address), spends its quota, hands the admission to the route
 * (`currentAdmission`), and puts the rate-limit headers on every answer,
 * errors included. A refused operation is answered by `ApiKeyAuth`, which
 * declares the 429; a request that is no operation is refused here.
 */
export const quotaAdmission = Effect.gen(function*() {
  const apiKeys = yield* ApiKeys
  const quota = yield* Quota
  const trust = yield* configuredProxyTrust
  const table = yield* routeTable(PetstoreApi)
  const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)

  const tracedAdmit = traced("quotaAdmission.admit")

  /** The quota decision for the caller `authenticate` found, put in the request's facts. */
  const decide = (
    request: HttpServerRequest.HttpServerRequest,
    facts: RequestFacts,
    operation: Option.Option<Operation>,
    key: Option.Option<ApiKey>
  ) => {
    if (Option.isSome(key)) {
      facts.keyId = key.value.id
      facts.plan = key.value.plan
    }
    const subject = Option.isSome(key)
      ? quota.keySubject(key.value)
      : quota.addressSubject(anonymousSubjectOf(request, trust))
    const costsNothing = Option.isSome(key) && Option.isSome(operation) && operation.value.costsNoQuota
    return Effect.flatMap(costsNothing ? quota.peek(subject) : quota.admit(subject), (decision) => {
      const banned = Option.isSome(decision.bannedUntil)
      const refused = costsNothing ? banned : !decision.admitted
      facts.quota = banned ? "banned" : refused ? "limited" : costsNothing ? "not_spent" : "admitted"
      const admission: Admission = {
        key,
        decision,
        refusal: refused ? Option.some(rateLimited(decision)) : Option.none()
      }
      facts.admission = admission
      return refused
        ? Effect.as(
          recordQuotaRefusal(
            Option.isSome(key) ? key.value.plan : "anonymous",
            banned ? "api_key_banned" : "rate_limited"
          ),
          admission
        )
        : Effect.succeed(admission)
    })
  }

  /**
   * An operation that costs no quota is only looked at for a ban, and only for a key: an address always pays.
   * Written as a pipeline on the fiber's context rather than a generator: it runs on every request under /v1.
   */
  const admit = (operation: Option.Option<Operation>) =>
    tracedAdmit(Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const facts = fiber.getRef(CurrentRequestFacts)
      facts.route = Option.isSome(operation) ? operation.value.path : `${API_BASE_PATH}/*`
      return Effect.flatMap(
        bearerCredential,
        (credential) =>
          Effect.flatMap(apiKeys.authenticate(credential), (key) => decide(request, facts, operation, key))
      )
    }))

  return <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.withFiber((fiber) => {
      const operation = table.matched(Context.getUnsafe(fiber.context, HttpRouter.RouteContext))
      return Effect.flatMap(admit(operation), (admission) => {
        const refused = Option.isSome(admission.refusal)
        const answer = refused && Option.isNone(operation)
          ? Effect.succeed(errorResponse(admission.refusal.value))
          : answerEveryFailure(httpEffect)
        return Effect.map(
          answer,
          (response) => HttpServerResponse.setHeaders(response, rateLimitHeaders(admission.decision, refused))
        )
      })
    })
})
