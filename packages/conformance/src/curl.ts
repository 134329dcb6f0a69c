import type { Exchange } from "./http.ts"

/** The variable a reproduced request reads its key from: the command never carries the secret. */
export const KEY_VARIABLE = "CONFORMANCE_KEY"

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * One `curl` command that sends the exchange's request again. A key is written
 * as `$CONFORMANCE_KEY`, so the command can be pasted into a ticket; any other
 * Authorization value (an unknown key the suite made up) is shown as sent.
 */
export const toCurl = (exchange: Exchange) => {
  const parts = ["curl", "-i", "--globoff"]
  if (exchange.method === "HEAD") parts.push("--head")
  else if (exchange.method !== "GET") parts.push("-X", exchange.method)
  parts.push(shellQuote(exchange.url))
  const authorization = exchange.authorization
  if (authorization._tag === "Key") parts.push("-H", `"Authorization: ${authorization.scheme} $${KEY_VARIABLE}"`)
  else if (authorization._tag === "Raw") parts.push("-H", shellQuote(`Authorization: ${authorization.value}`))
  for (const [name, value] of Object.entries(exchange.requestHeaders)) parts.push("-H", shellQuote(`${name}: ${value}`))
  if (exchange.requestBody !== undefined) parts.push("--data-raw", shellQuote(exchange.requestBody))
  return parts.join(" ")
}
