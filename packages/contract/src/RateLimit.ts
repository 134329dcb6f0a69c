import { Context, Schema } from "effect"
import { Plan } from "./Plan.ts"

export const QuotaWindow = Schema.Struct({
  limit: Schema.Int.annotate({ description: "Requests allowed in the window", examples: [60] }),
  remaining: Schema.Int.annotate({ description: "Requests left in the window", examples: [59] }),
  reset: Schema.Int.annotate({
    description: "Unix time, in seconds, at which the window resets",
    examples: [1795305660]
  })
}).annotate({ identifier: "QuotaWindow" })
export type QuotaWindow = typeof QuotaWindow.Type

export const Ban = Schema.Struct({
  until: Schema.Int.annotate({ description: "Unix time, in seconds, at which the ban ends", examples: [1795306500] })
}).annotate({ identifier: "Ban" })

/** What `GET /v1/rate_limit` answers: the caller's plan and both windows, without spending quota. */
export const RateLimitStatus = Schema.Struct({
  plan: Plan,
  minute: QuotaWindow,
  day: QuotaWindow,
  ban: Schema.NullOr(Ban)
}).annotate({ identifier: "RateLimitStatus" })
export type RateLimitStatus = typeof RateLimitStatus.Type

/** The counts of a key's current windows, as the admin API shows them. */
export const KeyUsage = Schema.Struct({
  minute: Schema.Struct({ ...QuotaWindow.fields, used: Schema.Int }),
  day: Schema.Struct({ ...QuotaWindow.fields, used: Schema.Int }),
  ban: Schema.NullOr(Ban)
}).annotate({ identifier: "KeyUsage" })
export type KeyUsage = typeof KeyUsage.Type

/** Marks an endpoint that is answered without spending quota (it is still refused to a banned key). */
export class CostsNoQuota extends Context.Service<CostsNoQuota, boolean>()("@petstore/contract/CostsNoQuota") {}
