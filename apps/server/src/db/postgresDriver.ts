import postgres from "postgres"
import { type Driver, INT8_OID, parseInt8, type RunQuery } from "./Driver.ts"

/**
 * The longest wait before the pool tries to connect again. postgres.js counts
 * failed attempts for the whole pool, so a long outage runs its own backoff
 * (3^n / 100 s) up to 20 s, and the server would answer 503 for that long
 * after the database is back: far past the `Retry-After: 5` its 503s promise.
 */
export const RECONNECT_DELAY_CAP_SECONDS = 2

/** Seconds before reconnecting after `failures` failed attempts: postgres.js's jittered growth, capped. */
export const reconnectDelaySeconds = (failures: number) =>
  (0.5 + Math.random() / 2) * Math.min(3 ** failures / 100, RECONNECT_DELAY_CAP_SECONDS)

/** PostgreSQL through postgres.js: a pool of 10 connections, every statement prepared. */
export const postgresDriver = (url: string): Driver => {
  const client = postgres(url, {
    max: 10,
    connect_timeout: 5,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: { application_name: "petstore" },
    types: {
      int8: { to: INT8_OID, from: [INT8_OID], serialize: String, parse: parseInt8 }
    }
  })
  const run = (runner: postgres.Sql | postgres.TransactionSql): RunQuery => (text, values) =>
    runner.unsafe(text, values as Array<postgres.ParameterOrJSON<never>>, { prepare: true })
  return {
    kind: "postgres",
    query: run(client),
    transaction: (body) => client.begin((tx) => body(run(tx))) as Promise<never>,
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify)
      return unlisten
    },
    close: () => client.end({ timeout: 5 })
  }
}
