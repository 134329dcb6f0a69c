import type { Exchange } from "./http.ts"

/** The variable a reproduced request reads its key from: the command never carries the secret. */
export const KEY_VARIABLE = "CONFORMANCE_KEY"

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * One `curl` command that sends the exchange's request again. A key is written
 * as `$CONFORMANCE_KEY`, so the command can be pasted into a ticket; any other
 * Authorization value (an unknown key, another scheme) is the suite's own and shown as sent.
 */
export const toCurl = (exchange: Exchange, authorization: "key" | "none" | { readonly raw: string }) => {
  const parts = ["curl", "-i", "--globoff"]
  if (exchange.method === "HEAD") parts.push("--head")
  else if (exchange.method !== "GET") parts.push("-X", exchange.method)
  parts.push(shellQuote(exchange.url))
  if (authorization === "key") parts.push("-H", `"Authorization: Bearer $${KEY_VARIABLE}"`)
  else if (authorization !== "none") parts.push("-H", shellQuote(`Authorization: ${authorization.raw}`))
  if (exchange.requestBody !== undefined) {
    parts.push("-H", shellQuote("Content-Type: application/json"), "--data-raw", shellQuote(exchange.requestBody))
  }
  return parts.join(" ")
}
