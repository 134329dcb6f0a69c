import postgres from "postgres"
import { type Driver, INT8_OID, parseInt8, type RunQuery } from "./Driver.ts"

/** PostgreSQL through postgres.js: a pool of 10 connections, every statement prepared. */
export const postgresDriver = (url: string): Driver => {
  const client = postgres(url, {
    max: 10,
    connect_timeout: 5,
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
