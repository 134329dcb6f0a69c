import { Effect } from "effect"
import { DatabaseError } from "../db/DatabaseError.ts"

/** A service as handlers see it: every operation's `DatabaseError` gone from its error channel. */
export type WithoutDatabaseError<S> = {
  readonly [K in keyof S]: S[K] extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
    ? (...args: Args) => Effect.Effect<A, Exclude<E, DatabaseError>, R>
    : S[K] extends Effect.Effect<infer A, infer E, infer R> ? Effect.Effect<A, Exclude<E, DatabaseError>, R>
    : S[K]
}

/**
 * Lets a database failure through to `renderCause` (`errors.ts`), the one place that answers it: operations
 * declare the 503 for the document, but do not answer it themselves. It travels as a defect because an operation
 * may fail only with the errors it declares.
 */
const dieOnDatabaseError = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, DatabaseError>, R> =>
  Effect.catch(
    effect,
    (error) => error instanceof DatabaseError ? Effect.die(error) : Effect.fail(error as Exclude<E, DatabaseError>)
  )

/**
 * The one policy for a database failure, applied where a handler group takes
 * a service: services name `DatabaseError` in their signatures, and no
 * handler answers it. It goes on as a defect (an operation may fail only with
 * the errors it declares) to `renderCause`, which answers an unavailable
 * database 503 with Retry-After and anything else 500.
 */
export const withoutDatabaseError = <S extends object>(service: S): WithoutDatabaseError<S> =>
  Object.fromEntries(
    Object.entries(service).map(([name, member]: [string, unknown]) => [
      name,
      Effect.isEffect(member)
        ? dieOnDatabaseError(member)
        : typeof member === "function"
        ? (...args: Array<unknown>) => {
          const result: unknown = member(...args)
          return Effect.isEffect(result) ? dieOnDatabaseError(result) : result
        }
        : member
    ])
  ) as WithoutDatabaseError<S>
