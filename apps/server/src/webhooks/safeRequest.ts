import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import { Agent as HttpAgent, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { BlockList, isIP } from "node:net"

/**
 * Addresses a webhook may not reach unless the operator allows private
 * addresses (`WEBHOOK_ALLOW_PRIVATE_ADDRESSES`): loopback, private, shared,
 * link-local (cloud metadata: 169.254.169.254, fd00:ec2::254), multicast,
 * reserved and unspecified ranges. The classic SSRF targets.
 */
const forbidden = new BlockList()
for (
  const [network, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.0.2.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24],
    ["224.0.0.0", 4],
    ["240.0.0.0", 4]
  ] as const
) forbidden.addSubnet(network, prefix, "ipv4")
for (
  const [network, prefix] of [
    ["::", 128],
    ["::1", 128],
    ["64:ff9b::", 96],
    ["100::", 64],
    ["2001:db8::", 32],
    ["fc00::", 7],
    ["fe80::", 10],
    ["ff00::", 8]
  ] as const
) forbidden.addSubnet(network, prefix, "ipv6")

/** Why an address may not be reached, or undefined when it may. IPv4-mapped IPv6 addresses are judged as IPv4. */
export const refusedAddress = (address: string): string | undefined => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  const family = mapped !== undefined ? 4 : isIP(address)
  if (family === 0) return `${address} is not an IP address`
  const blocked = family === 4 ? forbidden.check(mapped ?? address, "ipv4") : forbidden.check(address, "ipv6")
  return blocked ? `${address} is a loopback, private, link-local or reserved address` : undefined
}

export class WebhookRefused extends Error {
  readonly code = "EWEBHOOKREFUSED"
}

/** What a webhook URL may be, as the operator configured: checked at registration and before each attempt. */
export interface AddressPolicy {
  readonly allowHttp: boolean
  readonly allowPrivateAddresses: boolean
}

/** Why the URL may not be a webhook endpoint, or undefined. A host name's addresses are checked at connect time. */
export const refusedUrl = (url: string, policy: AddressPolicy): string | undefined => {
  const parsed = URL.parse(url)
  if (parsed === null) return "not a URL"
  if (parsed.protocol !== "https:" && !(policy.allowHttp && parsed.protocol === "http:")) {
    return policy.allowHttp ? "the URL must be http or https" : "the URL must be https"
  }
  if (parsed.username !== "" || parsed.password !== "") return "the URL may not carry a user name or password"
  if (parsed.hash !== "") return "the URL may not have a fragment"
  const host = parsed.hostname.replace(/^\[|\]$/g, "")
  if (policy.allowPrivateAddresses) return undefined
  if (isIP(host) !== 0) return refusedAddress(host)
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is a loopback name`
  return undefined
}

export type Resolve = (hostname: string) => Promise<ReadonlyArray<LookupAddress>>

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) => error ? reject(error) : resolve(addresses))
  )

export interface WebhookResponse {
  readonly status: number
  readonly retryAfter: string | undefined
  /** The first bytes of the answer, at most `MAX_ANSWER_BYTES`. */
  readonly body: string
}

/** Receivers' answers are read this far, no further: an answer is a status, not a download. */
export const MAX_ANSWER_BYTES = 4096
export const TIMEOUT_MILLIS = 15_000

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 16 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 16 })
}

/**
 * POSTs a delivery. The host's addresses are checked as the connection is
 * made (the request's `lookup`), so a name that resolves to a private address
 * after registration (DNS rebinding) is refused too. Redirects are not
 * followed (node's request never does); the answer is read up to 4 KiB; the
 * whole exchange has 15 seconds.
 */
export const postWebhook = (
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: AddressPolicy,
  resolve: Resolve
): Promise<WebhookResponse> =>
  new Promise((done, fail) => {
    const refusal = refusedUrl(url, policy)
    if (refusal !== undefined) return fail(new WebhookRefused(refusal))
    const target = new URL(url)
    const lookup = (
      hostname: string,
      options: { readonly all?: boolean; readonly family?: number },
      callback: (error: Error | null, address: string | ReadonlyArray<LookupAddress>, family?: number) => void
    ) => {
      resolve(hostname).then((addresses) => {
        const usable = addresses.filter((a) =>
          options.family === undefined || options.family === 0 || a.family === options.family
        )
        if (usable.length === 0) return callback(new Error(`${hostname} has no address`), [])
        if (!policy.allowPrivateAddresses) {
          const refused = usable.map((a) => refusedAddress(a.address)).find((reason) => reason !== undefined)
          if (refused !== undefined) return callback(new WebhookRefused(`${hostname} resolves to ${refused}`), [])
        }
        if (options.all) callback(null, usable)
        else callback(null, usable[0]!.address, usable[0]!.family)
      }, (error: Error) => callback(error, []))
    }
    const send = target.protocol === "https:" ? httpsRequest : httpRequest
    const request = send(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      agent: target.protocol === "https:" ? agents.https : agents.http,
      lookup: lookup as never
    })
    const timer = setTimeout(() => request.destroy(new Error("no answer within 15 s")), TIMEOUT_MILLIS)
    request.on("error", (error) => {
      clearTimeout(timer)
      fail(error)
    })
    request.on("response", (response) => {
      const chunks: Array<Buffer> = []
      let size = 0
      let finished = false
      const finish = () => {
        if (finished) return
        finished = true
        clearTimeout(timer)
        const retryAfter = response.headers["retry-after"]
        done({
          status: response.statusCode ?? 0,
          retryAfter,
          body: Buffer.concat(chunks).toString("utf8").slice(0, MAX_ANSWER_BYTES)
        })
      }
      response.on("data", (chunk: Buffer) => {
        if (size >= MAX_ANSWER_BYTES) return
        chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - size))
        size += chunk.length
        // Enough read: the rest is not waited for, and the connection is not reused.
        if (size >= MAX_ANSWER_BYTES) {
          response.destroy()
          finish()
        }
      })
      response.on("end", finish)
      response.on("error", finish)
      response.on("close", finish)
    })
    request.end(body)
  })
