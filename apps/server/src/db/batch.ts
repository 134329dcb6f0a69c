import { Exit, type Request } from "effect"

/**
 * Completes every request of a batch with the failure of the one statement
 * that was to answer them all, for resolvers that send a batch as one statement.
 */
export const failAll = <E>(entries: ReadonlyArray<Request.Entry<Request.Request<unknown, E>>>) => (error: E) => {
  for (const entry of entries) entry.completeUnsafe(Exit.fail(error))
}
