import type { ApiKeyId, Plan } from "@petstore/contract"
import { Data } from "effect"

/** No live key has this id: never issued, revoked, or purged after its expiry (an expired key is still found). */
export class KeyMissing extends Data.TaggedError("KeyMissing")<{ readonly keyId: ApiKeyId }> {}

/** `expiresAt` as sent is no real date, not ahead of now, or further ahead than a key may live. */
export class KeyExpiryRefused extends Data.TaggedError("KeyExpiryRefused")<{
  readonly reason: "not a valid date" | "in the past" | "too far ahead"
}> {}

/** The limits do not fit the plan: an enterprise key carries its own (`limitsGiven` false), no other plan does. */
export class KeyLimitsRefused extends Data.TaggedError("KeyLimitsRefused")<{
  readonly plan: Plan
  readonly limitsGiven: boolean
}> {}
