import { Context, Layer } from "effect"
import { makeMemoryQuotaStore } from "./MemoryQuotaStore.ts"
import { makePostgresQuotaStore } from "./PostgresQuotaStore.ts"
import type { QuotaStoreShape } from "./storeInterface.ts"

export {
  ADDRESS_SUBJECT_PREFIX,
  type Admission,
  admissionProblem,
  type AdmitRequest,
  DAY_MILLIS,
  EXPIRY_GRACE_MILLIS,
  MAX_SUBJECT_LENGTH,
  MINUTE_MILLIS
} from "./storeInterface.ts"

/**
 * Where quota counts live. Both stores implement the same rules; each
 * admission is atomic: a refused request spends nothing. Windows only move
 * forward, so callers whose clocks disagree by a few seconds (hosts of a fleet)
 * never restart a window's counts: none admits more than its limit.
 *
 * What a store is asked and answers is in `storeInterface.ts`; the stores are
 * `MemoryQuotaStore.ts` (with its expiry wheel, `expiryWheel.ts`),
 * `PostgresQuotaStore.ts` and `redis/RedisQuotaStore.ts`.
 */
export class QuotaStore extends Context.Service<QuotaStore, QuotaStoreShape>()("@petstore/server/quota/QuotaStore") {
  /** One process's counts, in its memory: the default with the embedded database. */
  static readonly memory = Layer.sync(QuotaStore, makeMemoryQuotaStore)

  /** Counts shared by every server process on the database. */
  static readonly postgres = Layer.effect(QuotaStore, makePostgresQuotaStore)
}
