import { isIPv4, isIPv6 } from "node:net"
import { Option } from "effect"

/** An IP address in one canonical spelling: dotted IPv4, or IPv6 as RFC 5952 writes it (lower case, `::`). */
export interface IpAddress {
  readonly family: "ipv4" | "ipv6"
  readonly text: string
}

/**
 * The longest spelling of an address with a port, bracketed IPv6 with an
 * embedded IPv4 (`[0000:…:ffff:255.255.255.255]:65535`) is 53 characters:
 * anything longer is no address, and is refused before any parsing.
 */
const MAX_ADDRESS_LENGTH = 64

const PORT = /^[0-9]{1,5}$/

/** The 8 groups of an IPv6 address the URL parser accepted and wrote canonically (no embedded IPv4 left). */
const groupsOf = (canonical: string): ReadonlyArray<number> => {
  const [head = "", tail] = canonical.split("::")
  const parse = (part: string) => part === "" ? [] : part.split(":").map((group) => Number.parseInt(group, 16))
  const [before, after] = [parse(head), tail === undefined ? [] : parse(tail)]
  return [...before, ...Array.from({ length: 8 - before.length - after.length }, () => 0), ...after]
}

/** RFC 5952's spelling, as the WHATWG URL parser writes an IPv6 host. */
const canonicalIpv6 = (address: string) => new URL(`http://[${address}]`).hostname.slice(1, -1)

const fromIpv6 = (address: string): IpAddress => {
  const canonical = canonicalIpv6(address)
  const groups = groupsOf(canonical)
  // An IPv4-mapped address (::ffff:a.b.c.d, as a dual-stack socket reports an IPv4 peer) is that IPv4 address.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6]!, groups[7]!]
    return { family: "ipv4", text: `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}` }
  }
  return { family: "ipv6", text: canonical }
}

/**
 * Reads an address as proxies and sockets write it: `203.0.113.9`,
 * `203.0.113.9:51234`, `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:443`,
 * an IPv4-mapped IPv6 address. A zone (`fe80::1%eth0`) means nothing off its
 * host and is dropped. Anything else (`unknown`, an obfuscated name, garbage)
 * is none: IPv4 is dotted decimal only, without leading zeros, as `node:net` checks it.
 */
export const parseIpAddress = (input: string): Option.Option<IpAddress> => {
  const trimmed = input.trim()
  if (trimmed.length === 0 || trimmed.length > MAX_ADDRESS_LENGTH) return Option.none()
  let host = trimmed
  if (trimmed.startsWith("[")) {
    const close = trimmed.indexOf("]")
    const rest = trimmed.slice(close + 1)
    if (close < 0 || (rest !== "" && !(rest.startsWith(":") && PORT.test(rest.slice(1))))) return Option.none()
    host = trimmed.slice(1, close)
    if (!isIPv6(host.split("%")[0]!)) return Option.none()
  } else if (trimmed.indexOf(":") === trimmed.lastIndexOf(":") && trimmed.includes(":")) {
    const [address, port] = trimmed.split(":") as [string, string]
    if (!PORT.test(port)) return Option.none()
    host = address
  }
  host = host.split("%")[0]!
  if (isIPv4(host)) return Option.some({ family: "ipv4", text: host })
  if (isIPv6(host)) return Option.some(fromIpv6(host))
  return Option.none()
}

/**
 * Whom an address's requests are counted against when they carry no key. An
 * IPv4 address is one subscriber at most. An IPv6 subscriber is given a whole
 * /64 at least (RFC 6177; SLAAC and privacy addresses change within it at
 * will), so counting single IPv6 addresses would hand one client 2^64
 * separate quotas: IPv6 is counted per /64.
 */
export const anonymousQuotaSubject = (address: IpAddress): string => {
  if (address.family === "ipv4") return address.text
  const network = groupsOf(address.text).slice(0, 4).map((group) => group.toString(16)).join(":")
  return `${canonicalIpv6(`${network}::`)}/64`
}
