import { Effect } from "effect"
import { accessSync, constants as fsConstants, existsSync, mkdirSync, statSync } from "node:fs"
import { StartupError } from "../startupError.ts"
import { describeTlsFailure } from "./connections.ts"
import { errorCode, isOpenFailure } from "./DatabaseError.ts"

/**
 * Why the database could not be opened or migrated at start-up, in the words
 * an operator acts on: one line, naming the variable to fix.
 */

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ")

const messageOf = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

/** Where a `postgres://` URL points, without its credentials or parameters: `host:port/database` (or several hosts). */
const databaseTarget = (url: string) => url.replace(/^[a-z]+:\/\/(?:[^@/]*@)?/i, "").replace(/\?.*$/, "")

/**
 * PostgreSQL could not be reached or entered. The server's own messages (`role
 * "x" does not exist`, `database "x" does not exist`, a failed password) are
 * already such words; socket errors are not.
 */
export const postgresOpenFailure = (variable: string, url: string, cause: unknown): StartupError | undefined => {
  const tls = describeTlsFailure(cause)
  if (tls === undefined && !isOpenFailure(cause)) return undefined
  const code = errorCode(cause)
  const reason = tls !== undefined
    ? tls
    : code === "ECONNREFUSED"
    ? "connection refused: is PostgreSQL running there?"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? "unknown host"
    : code === "CONNECT_TIMEOUT" || code === "ETIMEDOUT"
    ? "no answer within 5 s"
    : cause instanceof Error && cause.message !== ""
    ? cause.message
    : String(code ?? cause)
  return new StartupError({ message: `${variable} (${databaseTarget(url)}): ${oneLine(reason)}` })
}

/** PGlite could not open its files (`DATA_DIR` was checked first, so this is rare: a damaged or foreign directory). */
export const pgliteOpenFailure = (dataDir: string, cause: unknown) =>
  new StartupError({
    message: `DATA_DIR (${dataDir}): PGlite cannot open it: ${
      oneLine(cause instanceof Error ? cause.message : JSON.stringify(cause))
    }`
  })

/** The database was entered but refused a migration. */
export const migrationsRefused = (cause: unknown) =>
  new StartupError({ message: `the database refused the migrations: ${oneLine(messageOf(cause))}` })

const dataDirProblem = (cause: unknown) => {
  switch (errorCode(cause)) {
    case "ENOTDIR":
      return "not a directory"
    case "EACCES":
    case "EPERM":
      return "permission denied"
    case "EROFS":
      return "a read-only file system"
    case "ENOENT":
      return "its parent directory does not exist"
    default:
      return oneLine(messageOf(cause))
  }
}

/**
 * `DATA_DIR` exists (created, as PGlite would, when its parent does), is a
 * directory and may be written: PGlite's own errors about it are emscripten
 * error numbers. Not `recursive`: Node's recursive mkdir never returns under `/proc`.
 */
export const prepareDataDir = Effect.fnUntraced(function*(dir: string) {
  const isDirectory = yield* Effect.try({
    try: () => {
      if (!existsSync(dir)) mkdirSync(dir)
      accessSync(dir, fsConstants.R_OK | fsConstants.W_OK)
      return statSync(dir).isDirectory()
    },
    catch: (cause) => new StartupError({ message: `DATA_DIR (${dir}): ${dataDirProblem(cause)}` })
  })
  if (!isDirectory) return yield* new StartupError({ message: `DATA_DIR (${dir}): not a directory` })
})
