import { Effect, Result, Schema, SchemaIssue } from "effect"
import { describeRequest, describeResponse, type Exchange } from "./http.ts"
import { errorShapeProblem } from "./invariants.ts"
import { CheckFailed } from "./model.ts"

/** A failure about one exchange: the request, what was expected, and what came back (unless said otherwise). */
export const failure = (exchange: Exchange, expected: string, received = describeResponse(exchange)) =>
  new CheckFailed({ request: describeRequest(exchange), expected, received })

export const ensure = (holds: boolean, exchange: Exchange, expected: string, received?: string) =>
  holds ? Effect.void : Effect.fail(failure(exchange, expected, received))

const statusList = (statuses: ReadonlyArray<number>) =>
  statuses.length === 1 ? String(statuses[0]) : `${statuses.slice(0, -1).join(", ")} or ${statuses.at(-1)}`

export const expectStatus = (exchange: Exchange, ...statuses: ReadonlyArray<number>) =>
  ensure(statuses.includes(exchange.status), exchange, `status ${statusList(statuses)}`)

/** The status, and the spec's Error body whose `status` is the HTTP status. */
export const expectError = (exchange: Exchange, status: number) =>
  Effect.gen(function*() {
    yield* ensure(exchange.status === status, exchange, `status ${status} with an Error body`)
    const problem = errorShapeProblem(exchange)
    yield* ensure(
      problem === undefined,
      exchange,
      `an Error body {code, message, status: ${status}}`,
      `${problem}: ${describeResponse(exchange)}`
    )
  })

const formatIssue = SchemaIssue.makeFormatterDefault()

/** The body decoded with one of the contract's schemas, or a failure that says what does not match. */
export const decodeBody = <S extends Schema.ConstraintDecoder<unknown>>(
  schema: S,
  exchange: Exchange,
  what: string
): Effect.Effect<S["Type"], CheckFailed> => {
  const result = Schema.decodeUnknownResult(schema)(exchange.json)
  return Result.isSuccess(result)
    ? Effect.succeed(result.success)
    : Effect.fail(
      failure(
        exchange,
        what,
        `${formatIssue(result.failure.issue).replace(/\s+/g, " ")}; ${describeResponse(exchange)}`
      )
    )
}

export const header = (exchange: Exchange, name: string) => exchange.headers.get(name)?.trim()

/** A header that must hold a non-negative integer, as the X-RateLimit-* headers do; NaN when it does not. */
export const integerHeader = (exchange: Exchange, name: string) => {
  const value = header(exchange, name)
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : Number.NaN
}

export const isSuccess = (exchange: Exchange) => exchange.status >= 200 && exchange.status < 300

/**
 * Requests in a row, taken again (twice at most) while they straddle a window
 * boundary: a sample across a reset says nothing about how requests count.
 */
export const inOneWindow = <E, R>(take: Effect.Effect<ReadonlyArray<Exchange>, E, R>) =>
  Effect.gen(function*() {
    let sample = yield* take
    for (let retake = 0; retake < 2 && new Set(sample.map((x) => header(x, "x-ratelimit-reset"))).size > 1; retake++) {
      sample = yield* take
    }
    return sample
  })

/** Each answer of the sample has one request less left than the answer before it. */
export const ensureEachSpendsOne = (sample: ReadonlyArray<Exchange>, why = "") =>
  Effect.gen(function*() {
    for (let i = 1; i < sample.length; i++) {
      const before = integerHeader(sample[i - 1]!, "x-ratelimit-remaining")
      const after = integerHeader(sample[i]!, "x-ratelimit-remaining")
      yield* ensure(
        after === before - 1,
        sample[i]!,
        `X-RateLimit-Remaining: ${before - 1}, one less than the answer before (${before})${why}`
      )
    }
  })
