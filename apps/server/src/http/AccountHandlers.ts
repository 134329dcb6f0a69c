import { PetstoreApi, type QuotaWindow, type RateLimitStatus } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { RequestCaller } from "../auth/ApiKeyAuth.ts"
import { type QuotaDecision, RequestQuota, type WindowState } from "../quota/Quota.ts"

const toWindow = (window: WindowState): QuotaWindow => ({
  limit: window.limit,
  remaining: window.remaining,
  reset: Math.ceil(window.resetAt / 1000)
})

/** A key's quota as the wire shows it; shared with the admin API's usage report. */
export const quotaReport = (decision: QuotaDecision) => ({
  minute: toWindow(decision.minute),
  day: toWindow(Option.getOrElse(decision.day, () => decision.minute)),
  ban: Option.match(decision.bannedUntil, { onNone: () => null, onSome: (until) => ({ until: Math.ceil(until / 1000) }) })
})

export const AccountHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "account",
  Effect.fn(function*(handlers) {
    return handlers.handle("rateLimit", () =>
      Effect.gen(function*() {
        // ApiKeyAuth admitted the request, so the edge found its key and looked at its windows.
        const key = Option.getOrThrow(yield* RequestCaller)
        const decision = Option.getOrThrow(yield* RequestQuota)
        return { plan: key.plan, ...quotaReport(decision) } satisfies RateLimitStatus
      }))
  })
)
