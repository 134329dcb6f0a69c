import { RateLimited } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { recordQuotaRefusal } from "../observability/metrics.ts"
import { Quota } from "../quota/Quota.ts"
import { answerEveryFailure, errorResponse } from "./errors.ts"
import { anonymousSubjectOf, configuredProxyTrust } from "./quotaAdmission.ts"
import { rateLimitHeaders } from "./rateLimitHeaders.ts"
import { CurrentRequestFacts } from "./requestLog.ts"

/**
 * Route middleware of the anonymous documents: the client's address spends the anonymous quota (the
 * `ANONYMOUS_RATE_LIMIT` of `/v1` without a key, the same window), and every answer carries its rate-limit
 * headers; over it, 429.
 */
const anonymousAdmission = Effect.gen(function*() {
  const quota = yield* Quota
  const trust = yield* configuredProxyTrust
  return (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const facts = yield* CurrentRequestFacts
      const decision = yield* quota.admit(quota.addressSubject(anonymousSubjectOf(request, trust)))
      facts.quota = decision.admitted ? "admitted" : Option.isSome(decision.bannedUntil) ? "banned" : "limited"
      if (!decision.admitted) yield* recordQuotaRefusal("anonymous", "rate_limited")
      const response = decision.admitted
        ? yield* route
        : errorResponse(
          new RateLimited({
            code: "rate_limited",
            message: "Rate limit exceeded; retry after the number of seconds in Retry-After"
          })
        )
      return HttpServerResponse.setHeaders(response, rateLimitHeaders(decision, !decision.admitted))
    }).pipe(answerEveryFailure)
})

export const DocumentEdge = HttpRouter.middleware<{ handles: unknown }>()(anonymousAdmission).layer
