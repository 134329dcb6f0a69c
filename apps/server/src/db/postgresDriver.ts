import postgres from "postgres"
import { type CloseReason, Sessions } from "./answerWatch.ts"
import type { ConnectionSettings } from "./connectionSettings.ts"
import { socketFactory } from "./connections.ts"
import { type Driver, INT8_OID, parseInt8, type RunQuery } from "./Driver.ts"
import { pipelineOption, socketOption, statementSession } from "./postgresInternals.ts"

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

export interface PostgresDriverOptions {
  readonly poolSize: number
  /**
   * Named prepared statements (parsed once a connection) or unnamed ones (parsed
   * every time). A transaction pooler hands each transaction any server
   * connection, where a named statement may not exist: unnamed ones are the safe choice there.
   */
  readonly prepare: boolean
  /**
   * Whether a busy connection may be sent more statements before it answers (postgres.js's pipelining): only
   * where no transaction pooler can be in between (`postgresInternals.ts`, `pipelineOption`, says why).
   */
  readonly pipeline: boolean
  /** A connection owing an answer this long is closed and replaced; 0: never. */
  readonly silenceMillis: number
  readonly onConnectionClosed: (reason: CloseReason) => void
}

/** Connecting (TCP, TLS, and the start-up's answer) within this, or the connection is closed and counted as silent. */
const CONNECT_TIMEOUT_MILLIS = 5_000

/** PostgreSQL through postgres.js, each connection made by `connections.ts`. */
export const postgresDriver = (settings: ConnectionSettings, options: PostgresDriverOptions): Driver => {
  const sessions = new Sessions()
  const client = postgres(settings.url, {
    max: options.poolSize,
    prepare: options.prepare,
    // A backstop a second behind the watch's bound on the start-up (`connectTimeoutMillis`), which closes a silent
    // start-up first and counts it (`database_connections_closed_total{reason="silent"}`); postgres.js's own
    // timer, armed a moment earlier with the same 5 s, won that race and closed it uncounted. It still bounds a
    // connection made without the watch (migrations).
    connect_timeout: CONNECT_TIMEOUT_MILLIS / 1000 + 1,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    ...pipelineOption(options.pipeline),
    // TLS is made by the socket factory, per `sslmode`.
    ssl: false,
    ...socketOption(socketFactory({
      settings,
      silenceMillis: options.silenceMillis,
      connectTimeoutMillis: CONNECT_TIMEOUT_MILLIS,
      onClose: options.onConnectionClosed,
      sessions
    })),
    ...(settings.targetSessionAttrs === undefined
      ? {}
      : { target_session_attrs: settings.targetSessionAttrs as "primary" }),
    connection: { application_name: settings.applicationName },
    types: {
      int8: { to: INT8_OID, from: [INT8_OID], serialize: String, parse: parseInt8 }
    }
  })
  const run = (runner: postgres.Sql | postgres.TransactionSql): RunQuery => (text, values) =>
    runner.unsafe(text, values as Array<postgres.ParameterOrJSON<never>>, { prepare: options.prepare })
  return {
    kind: "postgres",
    query: run(client),
    transaction: (body) => client.begin((tx) => body(run(tx))) as Promise<never>,
    abandon: (statement) => {
      // postgres.js marks a statement it sent with its connection's session (`BackendKeyData`); null until then.
      // One not sent yet is left to run, its answer unread: postgres.js's own cancel of a statement that waits
      // for a connection to open leaves that connection out of the pool for good.
      const session = statementSession(statement)
      if (session !== undefined) sessions.close(session.pid, session.secret, "timed_out")
    },
    listen: async (channel, onNotify) => {
      const { unlisten } = await client.listen(channel, onNotify)
      return unlisten
    },
    close: () => client.end({ timeout: 5 })
  }
}
