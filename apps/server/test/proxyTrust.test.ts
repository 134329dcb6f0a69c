import { Option, Result } from "effect"
import { describe, expect, it } from "vitest"
import { anonymousQuotaSubject, parseIpAddress } from "../src/net/ipAddress.ts"
import { clientAddress, parseProxyTrust, type ProxyTrust } from "../src/net/proxyTrust.ts"

const text = (address: Option.Option<{ readonly text: string }>) =>
  Option.getOrUndefined(Option.map(address, (a) => a.text))
const trustOf = (setting: string): ProxyTrust => Result.getOrThrow(parseProxyTrust(setting))
const clientOf = (setting: string, forwardedFor: string | undefined, socket = "10.0.0.2") =>
  text(clientAddress(trustOf(setting), forwardedFor, Option.some(socket)))

describe("an IP address as proxies and sockets write it", () => {
  it.each([
    ["203.0.113.9", "203.0.113.9"],
    [" 203.0.113.9 ", "203.0.113.9"],
    ["203.0.113.9:51234", "203.0.113.9"],
    ["2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["[2001:db8::1]:443", "2001:db8::1"],
    ["::ffff:203.0.113.9", "203.0.113.9"],
    ["[::ffff:cb00:7109]:80", "203.0.113.9"],
    ["fe80::1%eth0", "fe80::1"],
    ["::1", "::1"]
  ])("%s is %s", (input, expected) => {
    expect(text(parseIpAddress(input))).toBe(expected)
  })

  it.each([
    "",
    "unknown",
    "_hidden",
    "203.0.113",
    "203.0.113.256",
    "01.2.3.4",
    "0x7f.0.0.1",
    "203.0.113.9:",
    "203.0.113.9:123456",
    "[2001:db8::1",
    "[2001:db8::1]x",
    "[203.0.113.9]",
    "2001:db8::1:443:1:2:3:4:5",
    "a".repeat(2400),
    "1.2.3.4, 5.6.7.8"
  ])("%j is no address", (input) => {
    expect(Option.isNone(parseIpAddress(input))).toBe(true)
  })

  it("counts an IPv6 client by its /64 and an IPv4 client alone", () => {
    const subject = (input: string) => anonymousQuotaSubject(Option.getOrThrow(parseIpAddress(input)))
    expect(subject("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64")
    expect(subject("2001:db8:1:2::1")).toBe(subject("[2001:db8:1:2:ffff::]:80"))
    expect(subject("2001:db8:1:3::1")).not.toBe(subject("2001:db8:1:2::1"))
    expect(subject("2001:db8::1")).toBe("2001:db8::/64")
    expect(subject("::ffff:203.0.113.9")).toBe("203.0.113.9")
  })
})

describe("TRUST_PROXY", () => {
  it.each([
    ["false", { kind: "none" }],
    ["0", { kind: "none" }],
    ["true", { kind: "hops", hops: 1 }],
    ["1", { kind: "hops", hops: 1 }],
    ["2", { kind: "hops", hops: 2 }]
  ])("%s is understood", (setting, expected) => {
    expect(trustOf(setting)).toEqual(expected)
  })

  it("takes proxy addresses and CIDR networks, IPv4 and IPv6", () => {
    expect(trustOf("10.0.0.0/8, 192.0.2.7,fd00::/8, ::1").kind).toBe("proxies")
  })

  it.each([
    "yes",
    "21",
    "-1",
    "1.5",
    "10.0.0.0/33",
    "fd00::/129",
    "10.0.0.0/8,",
    "proxy.example",
    "10.0.0.1/8/1",
    "10.0.0.0/x"
  ])(
    "%s is refused with a reason",
    (setting) => {
      expect(Result.isFailure(parseProxyTrust(setting))).toBe(true)
    }
  )
})

describe("the client address", () => {
  it("is the socket's peer without trusted proxies, whatever X-Forwarded-For says", () => {
    expect(clientOf("false", "203.0.113.9")).toBe("10.0.0.2")
    expect(clientOf("false", undefined, "::ffff:10.0.0.2")).toBe("10.0.0.2")
  })

  it("with hops, is the entry that many from the right: what the client wrote before them is never believed", () => {
    expect(clientOf("1", "203.0.113.9")).toBe("203.0.113.9")
    expect(clientOf("1", "203.0.113.9, 198.51.100.7")).toBe("198.51.100.7")
    expect(clientOf("true", "203.0.113.9,198.51.100.7")).toBe("198.51.100.7")
    expect(clientOf("2", "203.0.113.9, 198.51.100.7, 10.1.1.1")).toBe("198.51.100.7")
    // Fewer entries than hops: the leftmost is the one the proxy nearest the client wrote.
    expect(clientOf("3", "198.51.100.7, 10.1.1.1")).toBe("198.51.100.7")
    expect(clientOf("1", "[2001:db8::7]:5000")).toBe("2001:db8::7")
  })

  it("with proxies, is the rightmost address that is not one of them", () => {
    const proxies = "10.0.0.0/8, fd00::/8"
    expect(clientOf(proxies, "203.0.113.9, 198.51.100.7, 10.1.1.1")).toBe("198.51.100.7")
    expect(clientOf(proxies, "198.51.100.7, fd00::5")).toBe("198.51.100.7")
    // A peer that is no trusted proxy is the client: its X-Forwarded-For is the client's own words.
    expect(clientOf(proxies, "198.51.100.7", "192.0.2.1")).toBe("192.0.2.1")
    // Only proxies: the leftmost of them is as far as the chain goes.
    expect(clientOf(proxies, "10.9.9.9, 10.1.1.1")).toBe("10.9.9.9")
  })

  it("falls back to the socket's peer when the entry chosen is no address", () => {
    expect(clientOf("1", "unknown")).toBe("10.0.0.2")
    expect(clientOf("1", "")).toBe("10.0.0.2")
    expect(clientOf("10.0.0.0/8", "198.51.100.7, garbage, 10.1.1.1")).toBe("10.0.0.2")
  })

  it("reads a bounded tail of X-Forwarded-For, however long the header", () => {
    const long = `${"203.0.113.66, ".repeat(10_000)}198.51.100.7`
    expect(clientOf("1", long)).toBe("198.51.100.7")
    expect(clientOf("10.0.0.0/8", `${"10.1.1.1, ".repeat(1_000)}`)).toBe("10.0.0.2")
    // The cut never leaves the tail of an entry that reads as another address.
    const cutInside = `${"x".repeat(5000)}1203.0.113.99,${"10.1.1.1,".repeat(100)}10.1.1.1`
    expect(clientOf("10.0.0.0/8", cutInside)).not.toBe("203.0.113.99")
  })
})
