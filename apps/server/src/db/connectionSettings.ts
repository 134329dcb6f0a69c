import { readFileSync } from "node:fs"
import { StartupError } from "../startupError.ts"

/**
 * libpq's connection parameters in a `postgres://` URL, as managed PostgreSQL
 * services document them: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`, and
 * `target_session_attrs` and `application_name`. Any other parameter stops the
 * server with one line: ignoring one (as postgres.js would, or pass it on to
 * PostgreSQL as a setting) could mean a connection less safe than the operator asked for.
 */

export type SslMode = "disable" | "prefer" | "require" | "verify-ca" | "verify-full"

const SSL_MODES: ReadonlyArray<SslMode> = ["disable", "prefer", "require", "verify-ca", "verify-full"]
const TARGET_SESSION_ATTRS = ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"] as const

export interface TlsFiles {
  /** PEM certificates of the CAs to trust; undefined: the system's (Node's bundled) CAs. */
  readonly ca?: string
  readonly cert?: string
  readonly key?: string
}

export interface ConnectionSettings {
  /** The URL without its query: postgres.js parses hosts (one or several), user, password and database from it. */
  readonly url: string
  readonly sslMode: SslMode
  readonly tls: TlsFiles
  readonly targetSessionAttrs: (typeof TARGET_SESSION_ATTRS)[number] | undefined
  readonly applicationName: string
}

const SUPPORTED = ["sslmode", "sslrootcert", "sslcert", "sslkey", "target_session_attrs", "application_name"]

/** A PEM file a URL's parameter names; a file that cannot be read stops the start-up, naming both. */
export const readPem = (variable: string, parameter: string, path: string) => {
  try {
    return readFileSync(path, "utf8")
  } catch (cause) {
    const code = (cause as { code?: string }).code
    throw new StartupError({
      message: `${variable}: ${parameter} ${path}: ${
        code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String(code ?? cause)
      }`
    })
  }
}

/**
 * Reads the parameters of `url` (the value of `variable`, named in every
 * error) and the files they name. Throws a `StartupError` naming the variable
 * and the parameter. libpq's default `sslmode` is `prefer`, and so is ours.
 */
export const connectionSettings = (variable: string, url: string): ConnectionSettings => {
  const queryAt = url.indexOf("?")
  const base = queryAt === -1 ? url : url.slice(0, queryAt)
  const params = new URLSearchParams(queryAt === -1 ? "" : url.slice(queryAt + 1))
  const fail = (message: string): never => {
    throw new StartupError({ message: `${variable}: ${message}` })
  }
  for (const name of params.keys()) {
    if (!SUPPORTED.includes(name)) {
      fail(`the parameter ${name} is not supported (supported: ${SUPPORTED.join(", ")})`)
    }
  }
  const sslMode = params.get("sslmode") ?? "prefer"
  if (!SSL_MODES.includes(sslMode as SslMode)) fail(`sslmode=${sslMode}: expected one of ${SSL_MODES.join(", ")}`)
  const target = params.get("target_session_attrs") ?? undefined
  if (target !== undefined && !(TARGET_SESSION_ATTRS as ReadonlyArray<string>).includes(target)) {
    fail(`target_session_attrs=${target}: expected one of ${TARGET_SESSION_ATTRS.join(", ")}`)
  }
  const file = (parameter: string) => {
    const path = params.get(parameter)
    return path === null || (parameter === "sslrootcert" && path === "system")
      ? undefined
      : readPem(variable, parameter, path)
  }
  const [cert, key] = [file("sslcert"), file("sslkey")]
  if ((cert === undefined) !== (key === undefined)) fail("sslcert and sslkey go together: set both or neither")
  const ca = file("sslrootcert")
  return {
    url: base,
    sslMode: sslMode as SslMode,
    tls: { ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert, key: key! }) },
    // `any` is what no parameter means; postgres.js would check the server's state for it all the same.
    targetSessionAttrs: target === "any" ? undefined : target as ConnectionSettings["targetSessionAttrs"],
    applicationName: params.get("application_name") ?? "petstore"
  }
}
