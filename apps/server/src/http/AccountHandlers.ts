import { CurrentApiKey, PetstoreApi, type RateLimitStatus } from "@petstore/contract"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { currentAdmission } from "./quotaAdmission.ts"
import { quotaReport } from "./rateLimitHeaders.ts"

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
