/**
 * How keys appear in anything the suite prints or writes: by their last four
 * characters at most. A value too short to be a real key is not shown at all,
 * since its last four would give most of it away.
 */
export const lastFour = (secret: string) => secret.length >= 12 ? `…${secret.slice(-4)}` : "…"

/** Replaces every occurrence of the secrets in a text by their last four characters (a service may echo a key back). */
export const scrubber = (secrets: Iterable<string>) => {
  // Longest first, so that a key containing another is replaced whole.
  const ordered = [...new Set(secrets)].filter((secret) => secret !== "").sort((a, b) => b.length - a.length)
  return (text: string) => ordered.reduce((scrubbed, secret) => scrubbed.replaceAll(secret, lastFour(secret)), text)
}
