import type { Duplex } from "node:stream"

/**
 * Everything the server relies on in postgres.js beyond its documented API, in one place, written for
 * postgres.js **3.4.9** (pinned exactly in apps/server/package.json, and patched by `patches/postgres@3.4.9.patch`
 * for multi-host URLs and for `sql.begin` with `max_pipeline` 0: an upgrade drops or redoes that patch too). test/postgresInternals.test.ts checks each
 * reliance on a real PostgreSQL and names this module when an upgrade breaks one:
 *
 * - the `socket` option (src/connection.js: `options.socket(options)` for each connection, given the parsed
 *   `host` and `port` arrays and `path`), which its types do not declare: `connections.ts` makes every connection
 *   through it (libpq's `sslmode`, host rotation, the answer watch);
 * - the socket it is given is written with `Uint8Array` chunks (the answer watch frames them) and its writes are
 *   deferred to an immediate (`afterPendingWrites`);
 * - a statement it sent carries its connection's session key, `state.pid` and `state.secret` (from
 *   `BackendKeyData`), which `abandon` uses to close the connection of a statement that timed out;
 * - the `max_pipeline` option (src/index.js, default 100): how many statements a busy connection may be sent
 *   before the first is answered, once every connection is busy; 0 sends one at a time (`pipelineOption`).
 *
 * On an upgrade, run that test first; if it fails, fix this module (and only it) against the new version's source.
 */
export const POSTGRES_JS_VERSION = "3.4.9"

/** What postgres.js passes the `socket` option: the URL's hosts and ports (one or several), or a Unix socket path. */
export interface PostgresSocketOptions {
  readonly host: ReadonlyArray<string>
  readonly port: ReadonlyArray<number>
  readonly path?: string | false
}

/** The `socket` option, spread into postgres.js's options: postgres.js supports it, its types do not declare it. */
export const socketOption = (factory: (options: PostgresSocketOptions) => Promise<Duplex>): {} => ({ socket: factory })

/**
 * Whether postgres.js may send a connection the next statement before the last one is answered. Through a
 * transaction pooler it must not: PgBouncer (1.18 here) hands the server connection back to its pool on the
 * first statement's ReadyForQuery although the next one's Parse/Describe/Flush already reached that server, whose
 * answers then go to another client or nowhere. Under a concurrent load through it, about one request in a
 * thousand waited out the statement timeout (503) or bound its values by another statement's parameter types
 * (500: `Invalid time value`).
 */
export const pipelineOption = (pipeline: boolean): {} => ({ max_pipeline: pipeline ? 100 : 0 })

/** After the immediates already due (postgres.js's deferred writes) have run. */
export const afterPendingWrites = (run: () => void) => setImmediate(() => setImmediate(run))

/** Calls `onChunk` with every byte chunk postgres.js writes to `socket`, before it is written. */
export const tapWrites = <S extends Duplex>(socket: S, onChunk: (chunk: Uint8Array) => void): void => {
  const write = socket.write.bind(socket) as (...args: Array<unknown>) => boolean
  socket.write = ((chunk: unknown, ...rest: Array<unknown>) => {
    if (chunk instanceof Uint8Array) onChunk(chunk)
    return write(chunk, ...rest)
  }) as S["write"]
}

/**
 * The session key (`BackendKeyData`) of the connection a statement was sent on; undefined until postgres.js has
 * sent it (a statement waiting for a connection has none).
 */
export const statementSession = (statement: unknown): { readonly pid: number; readonly secret: number } | undefined => {
  const state = (statement as { state?: { pid?: number | null; secret?: number | null } | null }).state
  return state?.pid != null && state.secret != null ? { pid: state.pid, secret: state.secret } : undefined
}
