import { CurrentApiKey, PetstoreApi, type QuotaWindow, type RateLimitStatus } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { QuotaDecision, WindowState } from "../quota/Quota.ts"
import { currentAdmission } from "./quotaAdmission.ts"

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
        const key = yield* CurrentApiKey
        const { decision } = yield* currentAdmission
        return { plan: key.plan, ...quotaReport(decision) } satisfies RateLimitStatus
      }))
  })
)
