import { Effect, Exit, type Request } from "effect"
import type { DatabaseError } from "./DatabaseError.ts"

/**
 * Completes every request of a batch with the failure of the one statement
 * that was to answer them all, for resolvers that send a batch as one statement.
 */
export const failAll = <E>(entries: ReadonlyArray<Request.Entry<Request.Request<unknown, E>>>) => (error: E) => {
  for (const entry of entries) entry.completeUnsafe(Exit.fail(error))
}

/**
 * A batch fails no more requests than the one that made it fail. `answer`
 * sends one statement for the entries it is given and completes each of them,
 * with its answer or with a refusal of its own (no such row). When the
 * database refuses the batch's statement (an index row too large, a value out
 * of a column's range: not an outage), each request is answered again with a
 * statement of its own, one after another in the batch's order, so only the
 * request that poisons its statement fails. A statement is atomic: the refused
 * one changed nothing. An outage fails the batch at once; retrying each
 * request against a database that is away would only make it wait longer.
 */
export const answerTogetherOrEach = <R extends Request.Request<unknown, unknown>>(
  entries: ReadonlyArray<Request.Entry<R>>,
  // The statement's failure is the requests' `DatabaseError`, which each entry is completed with:
  // `never` (so no `answer` fits) for requests whose error channel has none.
  answer: (entries: ReadonlyArray<Request.Entry<R>>) => Effect.Effect<void, Extract<Request.Error<R>, DatabaseError>>
): Effect.Effect<void> =>
  answer(entries).pipe(
    Effect.catch((error) =>
      entries.length === 1 || error.unavailable
        ? Effect.sync(() => failAll(entries)(error))
        : Effect.forEach(
          entries,
          (entry) => answer([entry]).pipe(Effect.catch((own) => Effect.sync(() => failAll([entry])(own)))),
          {
            discard: true
          }
        )
    )
  )
