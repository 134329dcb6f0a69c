import type { RateLimited } from "@petstore/contract"
import type { Option } from "effect"
import type { ApiKey } from "../auth/ApiKeys.ts"
import type { QuotaDecision } from "../quota/Quota.ts"

/**
 * What quota admission decided for a request, carried in the request's facts (`requestLog.ts`) for the route:
 * a module of its own, as both the request log and quota admission (`quotaAdmission.ts`) name it.
 */
export interface Admission {
  /** The live key the bearer credential named; none without one, when the client's address spent its quota. */
  readonly key: Option.Option<ApiKey>
  readonly decision: QuotaDecision
  /** The error the request is refused with when it may not go on; none when it was admitted. */
  readonly refusal: Option.Option<RateLimited>
}
