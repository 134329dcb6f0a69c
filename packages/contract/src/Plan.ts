import { Schema } from "effect"

export const Plan = Schema.Literals(["free", "pro", "business", "enterprise"]).annotate({ identifier: "Plan" })
export type Plan = typeof Plan.Type

export const QuotaLimits = Schema.Struct({
  perMinute: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  perDay: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
}).annotate({ identifier: "QuotaLimits" })
export type QuotaLimits = typeof QuotaLimits.Type

/** Request quotas by plan (spec §8). Enterprise keys carry their own limits. */
export const planQuotas: { readonly [P in Exclude<Plan, "enterprise">]: QuotaLimits } = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 }
}
