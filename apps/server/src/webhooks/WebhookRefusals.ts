import { Data } from "effect"

/** The key has no webhook endpoint with this id (another key's endpoint does not exist for it). */
export class EndpointMissing extends Data.TaggedError("EndpointMissing")<{ readonly endpointId: string }> {}

/** The key already has `MAX_WEBHOOK_ENDPOINTS` endpoints. */
export class EndpointLimitReached extends Data.TaggedError("EndpointLimitReached")<{ readonly apiKeyId: string }> {}

/** No event with this id is one the key may have delivered again (not its to see, or older than the events kept). */
export class EventNotRedeliverable extends Data.TaggedError("EventNotRedeliverable")<{ readonly eventId: string }> {}
