import { Result } from "effect"

/** The origins `CORS_ALLOWED_ORIGINS` allows: none (CORS off), any (`*`), or these, serialised as browsers send them. */
export type AllowedOrigins =
  | { readonly _tag: "None" }
  | { readonly _tag: "Any" }
  | { readonly _tag: "Listed"; readonly origins: ReadonlySet<string> }

/** `scheme://host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address; no path, no trailing slash. */
const ORIGIN =
  /^[a-z][a-z0-9+.-]*:\/\/(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?$/

/**
 * Reads `CORS_ALLOWED_ORIGINS`: comma-separated origins, or `*` alone; empty is off. Origins compare as
 * browsers serialise them (RFC 6454): scheme and host in lower case, so they are lowered here.
 */
export const parseAllowedOrigins = (value: string): Result.Result<AllowedOrigins, string> => {
  const trimmed = value.trim()
  if (trimmed === "") return Result.succeed({ _tag: "None" })
  if (trimmed === "*") return Result.succeed({ _tag: "Any" })
  const origins = new Set<string>()
  for (const item of trimmed.split(",").map((part) => part.trim())) {
    if (item === "*") return Result.fail("* allows every origin and goes alone, not in a list")
    const origin = item.toLowerCase()
    const port = ORIGIN.exec(origin)?.[1]
    if (!ORIGIN.test(origin) || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
      return Result.fail(
        `${JSON.stringify(item)} is not an origin: scheme://host[:port], without a path or a trailing slash`
      )
    }
    origins.add(origin)
  }
  return Result.succeed({ _tag: "Listed", origins })
}

/** `CORS_ALLOWED_ORIGINS` as it is written, for the logged configuration. */
export const settingOfOrigins = (allowed: AllowedOrigins): string =>
  allowed._tag === "None" ? "" : allowed._tag === "Any" ? "*" : [...allowed.origins].join(", ")

export const isAllowedOrigin = (allowed: AllowedOrigins, origin: string) =>
  allowed._tag === "Any" || (allowed._tag === "Listed" && allowed.origins.has(origin))
