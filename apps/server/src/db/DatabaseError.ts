import { Data } from "effect"

/** The SQLSTATE (PostgreSQL) or error code (Node's sockets, postgres.js) of a failure, if it has one. */
export const errorCode = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/** A statement that took longer than the query timeout: the database (or the way to it) does not answer. */
export class QueryTimeout extends Error {
  constructor(millis: number) {
    super(`The database did not answer within ${millis} ms`)
  }
}

/**
 * Whether a failure means the database could not be reached or did not answer
 * (an outage, worth a 503 and a retry) rather than refusing the statement (a bug).
 */
export const isUnavailable = (cause: unknown): boolean => {
  const code = errorCode(cause)
  if (code === undefined) return cause instanceof QueryTimeout
  // SQLSTATE classes 08 (connection), 53 (insufficient resources), 57 (operator intervention); driver socket errors.
  return /^(08|53|57)/.test(code) || /^(E[A-Z]+|CONNECT(ION)?_[A-Z_]+)$/.test(code)
}

/**
 * Whether a failure at start-up means the database could not be reached or
 * entered, as opposed to a migration it refused: SQLSTATE class 28
 * (authorization) and 3D000 (no such database), beside what is an outage later on.
 */
export const isOpenFailure = (cause: unknown): boolean =>
  isUnavailable(cause) || /^(28|3D000$)/.test(errorCode(cause) ?? "")

/** Any failure of a statement, from either driver. */
export class DatabaseError extends Data.TaggedError("DatabaseError")<{ readonly cause: unknown }> {
  override get message() {
    return this.cause instanceof Error ? this.cause.message : String(this.cause)
  }

  /** An outage rather than a refused statement: see `isUnavailable`. */
  get unavailable(): boolean {
    return isUnavailable(this.cause)
  }
}
