import { BlockList, isIPv4, isIPv6 } from "node:net"
import { Option, Result } from "effect"
import { type IpAddress, parseIpAddress } from "./ipAddress.ts"

/**
 * Which proxies in front of the server are believed about the client's
 * address (`TRUST_PROXY`):
 * - `none`: no proxy; the client is the socket's peer and `X-Forwarded-For` is ignored.
 * - `hops`: that many proxies, each appending the address it saw to `X-Forwarded-For`;
 *   the client is the entry that many from the right (1: the rightmost).
 * - `proxies`: the proxies' addresses or networks; the client is the rightmost
 *   address, the socket's peer first, that is not one of them.
 */
export type ProxyTrust =
  | { readonly kind: "none" }
  | { readonly kind: "hops"; readonly hops: number }
  | { readonly kind: "proxies"; readonly proxies: BlockList; readonly listed: ReadonlyArray<string> }

/**
 * Only the tail of `X-Forwarded-For` is read: the entries the trusted proxies
 * wrote are at its right end, and whatever a client put before them is never
 * believed, so a header of any length costs the same.
 */
export const MAX_FORWARDED_ENTRIES = 20
const MAX_FORWARDED_TAIL = 2048
const HOPS = /^[0-9]{1,2}$/

const parseNetwork = (item: string): Result.Result<(proxies: BlockList) => void, string> => {
  const [address = "", prefix, ...extra] = item.split("/")
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined
  if (family === undefined || extra.length > 0) return Result.fail(`"${item}" is not an IP address or CIDR network`)
  if (prefix === undefined) return Result.succeed((proxies) => proxies.addAddress(address, family))
  const bits = family === "ipv4" ? 32 : 128
  if (!/^[0-9]{1,3}$/.test(prefix) || Number(prefix) > bits) {
    return Result.fail(`"${item}" has a prefix length outside 0–${bits}`)
  }
  return Result.succeed((proxies) => proxies.addSubnet(address, Number(prefix), family))
}

/**
 * Reads `TRUST_PROXY`: `false` (or `0`), a number of hops (`1` to 20; `true`
 * is kept as the name of `1`), or a comma-separated list of proxy addresses
 * and CIDR networks, IPv4 and IPv6 (`10.0.0.0/8, fd00::/8, 192.0.2.7`).
 */
export const parseProxyTrust = (setting: string): Result.Result<ProxyTrust, string> => {
  const value = setting.trim().toLowerCase()
  if (value === "false" || value === "0") return Result.succeed({ kind: "none" })
  if (value === "true") return Result.succeed({ kind: "hops", hops: 1 })
  if (HOPS.test(value)) {
    const hops = Number(value)
    return hops <= MAX_FORWARDED_ENTRIES
      ? Result.succeed({ kind: "hops", hops })
      : Result.fail(`at most ${MAX_FORWARDED_ENTRIES} proxy hops are read from X-Forwarded-For`)
  }
  const items = value.split(",").map((item) => item.trim())
  if (items.some((item) => item === "")) {
    return Result.fail("expected false, a number of proxy hops, or comma-separated proxy addresses/CIDR networks")
  }
  const proxies = new BlockList()
  for (const item of items) {
    const add = parseNetwork(item)
    if (Result.isFailure(add)) {
      return Result.fail(`${add.failure}; expected false, a number of proxy hops, or proxy addresses/CIDR networks`)
    }
    add.success(proxies)
  }
  return Result.succeed({ kind: "proxies", proxies, listed: items })
}

/** `TRUST_PROXY` as it is written, for the logged configuration. */
export const settingOfProxyTrust = (trust: ProxyTrust): string =>
  trust.kind === "none" ? "false" : trust.kind === "hops" ? String(trust.hops) : trust.listed.join(", ")

/** The entries the trusted proxies may have written, left to right. */
const forwardedTail = (header: string): ReadonlyArray<string> => {
  const cut = header.length > MAX_FORWARDED_TAIL
  const entries = (cut ? header.slice(-MAX_FORWARDED_TAIL) : header).split(",")
  // A cut leaves part of an entry at the left: it is no entry.
  return entries.slice(cut ? 1 : 0).slice(-MAX_FORWARDED_ENTRIES)
}

/**
 * The client's address under the trust model. The socket's peer is known for
 * sure; a forwarded entry is believed only where a trusted proxy wrote it. An
 * entry chosen that way that is no address (a proxy writing `unknown`, say)
 * leaves the socket's peer as the client. Only `X-Forwarded-For` is read: the
 * proxies documented all write it, and reading RFC 7239 `Forwarded` as well
 * would believe whichever of the two a proxy does not overwrite.
 */
export const clientAddress = (
  trust: ProxyTrust,
  forwardedFor: string | undefined,
  socketAddress: Option.Option<string>
): Option.Option<IpAddress> => {
  const peer = Option.flatMap(socketAddress, parseIpAddress)
  if (trust.kind === "none" || forwardedFor === undefined) return peer
  const entries = forwardedTail(forwardedFor)
  if (trust.kind === "hops") {
    const chosen = entries[Math.max(0, entries.length - trust.hops)]
    return Option.orElse(parseIpAddress(chosen ?? ""), () => peer)
  }
  const trusted = (address: IpAddress) => trust.proxies.check(address.text, address.family)
  if (Option.isNone(peer) || !trusted(peer.value)) return peer
  let client = peer
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = parseIpAddress(entries[index]!)
    if (Option.isNone(entry)) return peer
    client = entry
    if (!trusted(entry.value)) return client
  }
  return client
}
