import { MAX_KEY_LIFETIME_SECONDS, type Plan, type QuotaLimits } from "@petstore/contract"
import { Effect } from "effect"
import { KeyExpiryRefused, KeyLimitsRefused } from "./KeyRefusals.ts"

/** What an admin request asks of a key that its schema cannot check: a real expiry ahead, limits that fit the plan. */

/** Whether the fields are a real date and time: Date.parse takes 2027-02-30 for March 2nd, and 24:00 for midnight. */
const isCalendarTime = (text: string) => {
  const [year, month, day, hour, minute, second] = text.split(/[-Tt:.Zz+]/).map(Number) as Array<number>
  const date = new Date(Date.UTC(year!, month! - 1, day!))
  return date.getUTCMonth() === month! - 1 && date.getUTCDate() === day && hour! < 24 && minute! < 60 && second! < 60
}

/** `expiresAt` as sent: a time ahead of now by at most the maximum the README states. */
export const checkExpiresAt = (expiresAt: string, now: number) => {
  const at = Date.parse(expiresAt)
  const refuse = (reason: KeyExpiryRefused["reason"]) => Effect.fail(new KeyExpiryRefused({ reason }))
  if (Number.isNaN(at) || !isCalendarTime(expiresAt)) return refuse("not a valid date")
  if (at <= now) return refuse("in the past")
  if (at > now + MAX_KEY_LIFETIME_SECONDS * 1_000) return refuse("too far ahead")
  return Effect.succeed(new Date(at))
}

/** Enterprise keys carry their own limits; every other plan's limits are the plan's. */
export const checkPlanLimits = (plan: Plan, limits: QuotaLimits | undefined) => {
  return (plan === "enterprise") === (limits === undefined)
    ? Effect.fail(new KeyLimitsRefused({ plan, limitsGiven: limits !== undefined }))
    : Effect.void
}
