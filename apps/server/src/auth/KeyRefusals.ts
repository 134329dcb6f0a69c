import type { ApiKeyId } from "@petstore/contract"
import { Data } from "effect"

/** No live key has this id: never issued, revoked, or purged after its expiry (an expired key is still found). */
export class KeyMissing extends Data.TaggedError("KeyMissing")<{ readonly keyId: ApiKeyId }> {}
