import { Result } from "effect"

/**
 * `REDIS_URL`: one server's `redis://` or `rediss://` URL, or a Cluster's seed nodes comma-separated, with the TLS
 * parameters named as DATABASE_URL's (libpq's), so one set of names serves both: `sslrootcert`, `sslcert`,
 * `sslkey`. Any other parameter is refused rather than ignored. The seed nodes share one scheme and one set of
 * parameters: the Cluster names its other nodes itself, and each is reached as the seeds are. The certificate
 * files are read where the connection is made (`quota/redis/redisConnection.ts`).
 */

export interface RedisUrl {
  /** The setting as given, for the logged configuration (masked). */
  readonly text: string
  /** The URLs as the client takes them: without their parameters. */
  readonly urls: ReadonlyArray<string>
  /** The first URL's user and password, decoded: a Cluster's client gives them to every node it names. */
  readonly username: string | undefined
  readonly password: string | undefined
  /**
   * Undefined for `redis://`. For `rediss://`: paths of PEM files, the CAs to trust (unset, or `system`: the
   * system's) and a client certificate for a Redis that asks for one (`tls-auth-clients`).
   */
  readonly tls: {
    readonly sslRootCert: string | undefined
    readonly sslCert: string | undefined
    readonly sslKey: string | undefined
  } | undefined
}

const SUPPORTED = ["sslrootcert", "sslcert", "sslkey"]

/** Reads the URLs of `setting` (already checked to be `redis://` or `rediss://` URLs); a refusal names what is wrong. */
export const parseRedisUrl = (setting: string): Result.Result<RedisUrl, string> => {
  const split = setting.split(",").map((url) => {
    const trimmed = url.trim()
    const queryAt = trimmed.indexOf("?")
    return {
      url: queryAt === -1 ? trimmed : trimmed.slice(0, queryAt),
      query: queryAt === -1 ? "" : trimmed.slice(queryAt + 1),
      secure: /^rediss:/i.test(trimmed)
    }
  })
  const first = split[0]
  if (first === undefined || first.url === "") return Result.fail("no URL")
  if (split.some((each) => each.secure !== first.secure || each.query !== first.query)) {
    return Result.fail(
      "the seed nodes differ in scheme or parameters: give each the same (redis:// or rediss://, and the same ?…)"
    )
  }
  const params = new URLSearchParams(first.query)
  for (const name of params.keys()) {
    if (!SUPPORTED.includes(name)) {
      return Result.fail(`the parameter ${name} is not supported (supported: ${SUPPORTED.join(", ")})`)
    }
    if (!first.secure) return Result.fail(`${name} needs TLS: a rediss:// URL`)
  }
  const [sslCert, sslKey] = [params.get("sslcert") ?? undefined, params.get("sslkey") ?? undefined]
  if ((sslCert === undefined) !== (sslKey === undefined)) {
    return Result.fail("sslcert and sslkey go together: set both or neither")
  }
  const sslRootCert = params.get("sslrootcert") ?? undefined
  let seed: URL
  try {
    seed = new URL(first.url)
  } catch {
    // Not the URL itself: it may hold a password.
    return Result.fail("the first URL cannot be read as a URL")
  }
  return Result.succeed({
    text: setting,
    urls: split.map((each) => each.url),
    username: seed.username === "" ? undefined : decodeURIComponent(seed.username),
    password: seed.password === "" ? undefined : decodeURIComponent(seed.password),
    tls: first.secure ? { sslRootCert: sslRootCert === "system" ? undefined : sslRootCert, sslCert, sslKey } : undefined
  })
}
