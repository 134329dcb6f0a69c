import { Context, Effect } from "effect"
import { type ApiKey, CheckFailed } from "./model.ts"
import { lastFour } from "./secrets.ts"
import { send as sendOnWire, TransportError } from "./transport.ts"

/** One request the suite sent and what came back, kept whole so that a failure can show both. */
export interface Exchange {
  readonly method: string
  readonly url: string
  /** How the request authenticated, without the secret. */
  readonly credential: string
  /** The Authorization header as a reproduction may show it: a key by its scheme only, the suite's own made-up values whole. */
  readonly authorization: { readonly _tag: "Key"; readonly scheme: string } | { readonly _tag: "None" } | {
    readonly _tag: "Raw"
    readonly value: string
  }
  /** The other request headers, as sent (names in lower case). */
  readonly requestHeaders: Readonly<Record<string, string>>
  readonly requestBody: string | undefined
  readonly status: number
  readonly statusText: string
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON, or `undefined` when it is empty or not JSON. */
  readonly json: unknown
  readonly sentAt: number
  readonly receivedAt: number
}

/** How a request authenticates. Only a key sent with the Bearer scheme spends that key's quota. */
export type Credential =
  | { readonly _tag: "Key"; readonly key: ApiKey; readonly scheme?: string }
  | { readonly _tag: "None" }
  | { readonly _tag: "Raw"; readonly authorization: string; readonly description: string }

export const withKey = (key: ApiKey, scheme = "Bearer"): Credential => ({ _tag: "Key", key, scheme })
export const anonymous: Credential = { _tag: "None" }

export interface SendOptions {
  readonly method?: string
  /** Relative to the base URL (`/pets?limit=1`), or an absolute URL such as a `Link` target. */
  readonly path: string
  readonly credential: Credential
  /** Sent as `application/json`. */
  readonly json?: unknown
  readonly body?: string
  readonly headers?: Record<string, string>
  /** On a 429, wait as long as `Retry-After` asks and send again (up to 3 times). Default: true. */
  readonly retryWhenLimited?: boolean
  /**
   * Send even while the key waits out a 429. Only for `GET /rate_limit`, which the
   * README documents as costing no quota and answered while limited, so it cannot lead to a ban.
   */
  readonly costsNoQuota?: boolean
}

/**
 * The service's HTTP interface as the checks use it. Every request with a key
 * goes through that key's gate: after a 429 nothing more is sent with the key
 * until `Retry-After` has passed, so the suite never gets a key banned.
 */
export class Http extends Context.Service<Http, {
  readonly send: (options: SendOptions) => Effect.Effect<Exchange, CheckFailed>
  /** Requests sent with the key that were not refused with 429: what the key has spent this run. */
  readonly spent: (key: ApiKey) => Effect.Effect<number>
}>()("@petstore/conformance/Http") {}

const MAX_RETRIES_WHEN_LIMITED = 3

/** `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), in milliseconds from `now`. */
export const retryAfterMillis = (headers: Headers, now: number): number | undefined => {
  const value = headers.get("retry-after")?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const describeCredential = (credential: Credential) => {
  switch (credential._tag) {
    case "None":
      return "no Authorization header"
    case "Raw":
      return credential.description
    case "Key":
      return `${credential.scheme ?? "Bearer"} ${lastFour(credential.key.secret)} (${credential.key.label})`
  }
}

const authorizationOf = (credential: Credential) => {
  switch (credential._tag) {
    case "None":
      return undefined
    case "Raw":
      return credential.authorization
    case "Key":
      return `${credential.scheme ?? "Bearer"} ${credential.key.secret}`
  }
}

/** Requests without a valid key share the quota of the client's address. */
const quotaSubject = (credential: Credential) =>
  credential._tag === "Key" && (credential.scheme ?? "Bearer").toLowerCase() === "bearer"
    ? `key:${credential.key.secret}`
    : "anonymous"

const excerpt = (text: string, length = 300) => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > length ? `${flat.slice(0, length)}…` : flat
}

export const describeRequest = (exchange: Exchange) =>
  `${exchange.method} ${exchange.url} (${exchange.credential})` +
  (exchange.requestBody === undefined ? "" : ` body ${excerpt(exchange.requestBody, 160)}`)

const RATE_LIMIT_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"]

/** The status, the rate-limit headers (and any asked for) and the start of the body. */
export const describeResponse = (exchange: Exchange, headers: ReadonlyArray<string> = []) => {
  // A redirect is a finding (the API has none), and where it points says what the deployment got wrong.
  const redirect = exchange.status >= 300 && exchange.status < 400 ? ["location"] : []
  const shown = [...RATE_LIMIT_HEADERS, ...redirect, ...headers.map((name) => name.toLowerCase())]
    .filter((name, index, all) => all.indexOf(name) === index && exchange.headers.has(name))
    .map((name) => `${name}: ${exchange.headers.get(name)}`)
  const body = exchange.text === "" ? "empty body" : `body ${excerpt(exchange.text)}`
  return [`${exchange.status} ${exchange.statusText}`.trim(), ...shown, body].join(", ")
}

export interface HttpSettings {
  readonly baseUrl: string
  /** A wait longer than this (a ban, a spent daily quota) fails the request instead of stalling the run. */
  readonly maxWaitSeconds: number
  readonly requestTimeoutSeconds: number
  readonly observe: (exchange: Exchange) => void
  readonly progress: (line: string) => void
}

const fetchOnce = async (settings: HttpSettings, options: SendOptions, signal: AbortSignal): Promise<Exchange> => {
  const method = options.method ?? "GET"
  const url = /^https?:\/\//.test(options.path) ? options.path : `${settings.baseUrl}${options.path}`
  const headers: Record<string, string> = { accept: "application/json", ...options.headers }
  const authorization = authorizationOf(options.credential)
  if (authorization !== undefined) headers.authorization = authorization
  let body = options.body
  if (options.json !== undefined) {
    body = JSON.stringify(options.json)
    headers["content-type"] ??= "application/json"
  }
  const sentAt = Date.now()
  const response = await sendOnWire({
    method,
    url,
    headers,
    body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(settings.requestTimeoutSeconds * 1000)])
  })
  const text = response.text
  let json: unknown = undefined
  if (text !== "") {
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
  }
  return {
    method,
    url,
    credential: describeCredential(options.credential),
    authorization: options.credential._tag === "Key"
      ? { _tag: "Key", scheme: options.credential.scheme ?? "Bearer" }
      : options.credential._tag === "Raw"
      ? { _tag: "Raw", value: options.credential.authorization }
      : { _tag: "None" },
    requestHeaders: Object.fromEntries(
      Object.entries(headers).filter(([name]) => name.toLowerCase() !== "authorization")
    ),
    requestBody: body,
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
    text,
    json,
    sentAt,
    receivedAt: Date.now()
  }
}

export const makeHttp = (settings: HttpSettings) =>
  Effect.sync(() => {
    /** Per quota subject: when it may send again, and how many 429s without a usable Retry-After it has had. */
    const gates = new Map<string, { notBefore: number; backoffs: number }>()
    const spentBySubject = new Map<string, number>()

    const waitMillis = (subject: string) => Math.max(0, (gates.get(subject)?.notBefore ?? 0) - Date.now())

    const awaitGate = (subject: string, credential: string) =>
      Effect.gen(function*() {
        const millis = waitMillis(subject)
        if (millis === 0) return
        if (millis > settings.maxWaitSeconds * 1000) {
          return yield* new CheckFailed({
            expected: `to send with ${credential}`,
            received: `the service asked this key to wait another ${Math.ceil(millis / 1000)} s (Retry-After), ` +
              `longer than the ${settings.maxWaitSeconds} s this run waits; give a fresh key`
          })
        }
        if (millis >= 2000) {
          settings.progress(`${credential}: waiting ${Math.ceil(millis / 1000)} s as Retry-After asks`)
        }
        yield* Effect.sleep(millis)
      })

    /** After a 429: wait as Retry-After says, or back off exponentially (spec §8 rule 3) when it says nothing usable. */
    const closeGate = (subject: string, exchange: Exchange) => {
      const gate = gates.get(subject) ?? { notBefore: 0, backoffs: 0 }
      const asked = retryAfterMillis(exchange.headers, exchange.receivedAt)
      const millis = asked ?? Math.min(60_000, 1000 * 2 ** gate.backoffs++)
      // A little margin: the service counts whole seconds from when it decided, not from when we heard.
      gate.notBefore = Math.max(gate.notBefore, exchange.receivedAt + millis + 100)
      gates.set(subject, gate)
    }

    const sendOnce = (options: SendOptions) =>
      Effect.tryPromise({
        try: (signal) => fetchOnce(settings, options, signal),
        catch: (error) =>
          new CheckFailed({
            request: `${options.method ?? "GET"} ${options.path} (${describeCredential(options.credential)})`,
            expected: "an HTTP response",
            received: `no response: ${error instanceof Error ? error.message : String(error)}`
          })
      })

    const send = (options: SendOptions): Effect.Effect<Exchange, CheckFailed> =>
      Effect.gen(function*() {
        const subject = quotaSubject(options.credential)
        for (let attempt = 0;; attempt++) {
          if (options.costsNoQuota !== true) yield* awaitGate(subject, describeCredential(options.credential))
          const exchange = yield* sendOnce(options)
          settings.observe(exchange)
          if (exchange.status !== 429) {
            spentBySubject.set(subject, (spentBySubject.get(subject) ?? 0) + 1)
            const gate = gates.get(subject)
            if (gate !== undefined) gate.backoffs = 0
            return exchange
          }
          if (options.costsNoQuota !== true) closeGate(subject, exchange)
          if (options.retryWhenLimited === false || attempt === MAX_RETRIES_WHEN_LIMITED) return exchange
        }
      })

    return Http.of({
      send,
      spent: (key) => Effect.sync(() => spentBySubject.get(`key:${key.secret}`) ?? 0)
    })
  })

/** The first request of a run: tells a base URL that answers from one that does not. */
export const probe = (settings: Pick<HttpSettings, "baseUrl" | "requestTimeoutSeconds">, credential: Credential) =>
  Effect.tryPromise({
    try: (signal) =>
      fetchOnce({ ...settings, maxWaitSeconds: 0, observe: () => {}, progress: () => {} }, {
        path: "/pets?limit=1",
        credential
      }, signal),
    catch: (error) => ({
      message: error instanceof Error ? error.message : String(error),
      nothingThere: error instanceof TransportError && error.nothingThere
    })
  })
