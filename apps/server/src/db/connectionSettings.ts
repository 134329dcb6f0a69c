import { readFileSync } from "node:fs"
import type { PostgresUrl, SslMode } from "../net/postgresUrl.ts"
import { StartupError } from "../startupError.ts"

export interface TlsFiles {
  /** PEM certificates of the CAs to trust; undefined: the system's (Node's bundled) CAs. */
  readonly ca?: string
  readonly cert?: string
  readonly key?: string
}

/** A connection as `connections.ts` and `postgresDriver.ts` make it: the configured URL with its files read. */
export interface ConnectionSettings {
  /** The URL without its query: postgres.js parses hosts (one or several), user, password and database from it. */
  readonly url: string
  readonly sslMode: SslMode
  readonly tls: TlsFiles
  readonly targetSessionAttrs: PostgresUrl["targetSessionAttrs"]
  readonly applicationName: string
}

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
 * The files the parameters of `url` (the value of `variable`, checked by the configuration) name, read: a file
 * that cannot be read throws a `StartupError` naming the variable and the parameter.
 */
export const connectionSettings = (variable: string, url: PostgresUrl): ConnectionSettings => {
  const file = (parameter: string, path: string | undefined) =>
    path === undefined ? undefined : readPem(variable, parameter, path)
  const [cert, key] = [file("sslcert", url.sslCert), file("sslkey", url.sslKey)]
  const ca = file("sslrootcert", url.sslRootCert === "system" ? undefined : url.sslRootCert)
  return {
    url: url.base,
    sslMode: url.sslMode,
    tls: { ...(ca === undefined ? {} : { ca }), ...(cert === undefined || key === undefined ? {} : { cert, key }) },
    targetSessionAttrs: url.targetSessionAttrs,
    applicationName: url.applicationName
  }
}
