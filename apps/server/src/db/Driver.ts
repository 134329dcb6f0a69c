/** What the two engines, postgres.js and PGlite, have in common, as far as this service needs. */

export type Rows = ReadonlyArray<Record<string, unknown>>
export type RunQuery = (text: string, values: ReadonlyArray<unknown>) => Promise<Rows>

export interface Driver {
  readonly kind: "postgres" | "pglite"
  readonly query: RunQuery
  readonly transaction: <A>(body: (query: RunQuery) => Promise<A>) => Promise<A>
  /**
   * Gives up a statement `query` started that timed out, so that nothing waits
   * behind it: if it was sent, its connection is closed (and replaced), whatever
   * state the connection is in. One still waiting for a connection is left to run.
   */
  readonly abandon: (statement: Promise<Rows>) => void
  /** Calls `onNotify` for each NOTIFY on the channel; the returned function stops listening. */
  readonly listen: (channel: string, onNotify: (payload: string) => void) => Promise<() => Promise<void>>
  readonly close: () => Promise<void>
}

export const INT8_OID = 20

/** int8 columns hold ids and counters, all within the safe-integer range the API admits: both drivers read them as numbers. */
export const parseInt8 = (value: string) => Number(value)
