import { Schema } from "effect"

export const Plan = Schema.Literals(["free", "pro", "business", "enterprise"]).annotate({ identifier: "Plan" })
export type Plan = typeof Plan.Type

/** The largest value of a PostgreSQL `integer` column, where limits and pet versions are stored. */
export const POSTGRES_INTEGER_MAX = 2_147_483_647

/** A limit is stored in an `integer` column: beyond its range is the client's mistake (400), not an outage. */
const Limit = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: POSTGRES_INTEGER_MAX }, {
    expected: `a whole number from 1 to ${POSTGRES_INTEGER_MAX}`
  })
)

export const QuotaLimits = Schema.Struct({
  perMinute: Limit,
  perDay: Limit
}).annotate({ identifier: "QuotaLimits" })
export type QuotaLimits = typeof QuotaLimits.Type

/** Request quotas by plan (spec §8). Enterprise keys carry their own limits. */
export const planQuotas: { readonly [P in Exclude<Plan, "enterprise">]: QuotaLimits } = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 }
}
