import { Result } from "effect"

/**
 * A `postgres://` URL and libpq's connection parameters in it, as managed
 * PostgreSQL services document them: `sslmode`, `sslrootcert`, `sslcert`,
 * `sslkey`, and `target_session_attrs` and `application_name`. Any other
 * parameter is refused: ignoring one (as postgres.js would, or pass it on to
 * PostgreSQL as a setting) could mean a connection less safe than the operator
 * asked for. The certificate files are read where the connections are made
 * (`db/connectionSettings.ts`).
 */

export type SslMode = "disable" | "prefer" | "require" | "verify-ca" | "verify-full"

const SSL_MODES: ReadonlyArray<SslMode> = ["disable", "prefer", "require", "verify-ca", "verify-full"]
const TARGET_SESSION_ATTRS = ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"] as const

export type TargetSessionAttrs = Exclude<(typeof TARGET_SESSION_ATTRS)[number], "any">

export interface PostgresUrl {
  /** The URL as given, for the logged configuration (masked) and the lines naming its host. */
  readonly text: string
  /** The URL without its query: postgres.js parses hosts (one or several), user, password and database from it. */
  readonly base: string
  readonly sslMode: SslMode
  /** Paths of PEM files: the CAs to trust (unset, or `system`: Node's bundled CAs), and the client's certificate. */
  readonly sslRootCert: string | undefined
  readonly sslCert: string | undefined
  readonly sslKey: string | undefined
  /** Unset means `any`; postgres.js would check the server's state for it all the same. */
  readonly targetSessionAttrs: TargetSessionAttrs | undefined
  readonly applicationName: string
}

const SUPPORTED = ["sslmode", "sslrootcert", "sslcert", "sslkey", "target_session_attrs", "application_name"]

/** Reads the parameters of `url`; a refusal names the parameter. libpq's default `sslmode` is `prefer`, and so is ours. */
export const parsePostgresUrl = (url: string): Result.Result<PostgresUrl, string> => {
  const queryAt = url.indexOf("?")
  const params = new URLSearchParams(queryAt === -1 ? "" : url.slice(queryAt + 1))
  const unsupported = [...params.keys()].find((name) => !SUPPORTED.includes(name))
  if (unsupported !== undefined) {
    return Result.fail(`the parameter ${unsupported} is not supported (supported: ${SUPPORTED.join(", ")})`)
  }
  const sslMode = params.get("sslmode") ?? "prefer"
  if (!SSL_MODES.includes(sslMode as SslMode)) {
    return Result.fail(`sslmode=${sslMode}: expected one of ${SSL_MODES.join(", ")}`)
  }
  const target = params.get("target_session_attrs") ?? undefined
  if (target !== undefined && !(TARGET_SESSION_ATTRS as ReadonlyArray<string>).includes(target)) {
    return Result.fail(`target_session_attrs=${target}: expected one of ${TARGET_SESSION_ATTRS.join(", ")}`)
  }
  const [sslCert, sslKey] = [params.get("sslcert") ?? undefined, params.get("sslkey") ?? undefined]
  if ((sslCert === undefined) !== (sslKey === undefined)) {
    return Result.fail("sslcert and sslkey go together: set both or neither")
  }
  return Result.succeed({
    text: url,
    base: queryAt === -1 ? url : url.slice(0, queryAt),
    sslMode: sslMode as SslMode,
    sslRootCert: params.get("sslrootcert") ?? undefined,
    sslCert,
    sslKey,
    targetSessionAttrs: target === "any" ? undefined : target as TargetSessionAttrs | undefined,
    applicationName: params.get("application_name") ?? "petstore"
  })
}
