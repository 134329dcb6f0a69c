import { Clock, Data, Effect, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { Event } from "./Event.ts"

/** How far a delivery's `webhook-timestamp` may be from the receiver's clock, either way (Standard Webhooks). */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60

/** Why a delivery was refused: it is not one this service signed with this secret, now. */
export class WebhookVerificationError
  extends Data.TaggedError("WebhookVerificationError")<{ readonly message: string }>
{}

/** The key a `whsec_…` secret stands for: the base64 after the prefix, decoded. */
const keyOf = (secret: string) =>
  Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64")

/**
 * `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` (Standard Webhooks
 * 1.0), keyed with the secret's decoded key: what the service sends in
 * `webhook-signature`, one per secret in force.
 */
export const signWebhook = (secret: string, id: string, timestampSeconds: number, body: string) =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

type HeaderBag = Headers | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const headerOf = (headers: HeaderBag, name: string): string | undefined => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]
  return Array.isArray(entry) ? entry.join(" ") : (entry as string | undefined)
}

const refused = (message: string) => Effect.fail(new WebhookVerificationError({ message }))

/**
 * Verifies a delivery as a receiver should, before trusting it: the
 * `webhook-signature` must hold a `v1` signature of this id, timestamp and
 * body (compared in constant time), and the timestamp must be within 5 minutes
 * of now. Returns the event, decoded. `body` is the request body exactly as
 * received: parse it only after this.
 */
export const verifyWebhook = (secret: string, headers: HeaderBag, body: string | Uint8Array) =>
  Effect.gen(function*() {
    const id = headerOf(headers, "webhook-id")
    const timestamp = headerOf(headers, "webhook-timestamp")
    const signatures = headerOf(headers, "webhook-signature")
    if (id === undefined || timestamp === undefined || signatures === undefined) {
      return yield* refused("missing webhook-id, webhook-timestamp or webhook-signature")
    }
    if (!/^[0-9]{1,12}$/.test(timestamp)) return yield* refused("webhook-timestamp is not a number of seconds")
    const nowSeconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (Math.abs(nowSeconds - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) {
      return yield* refused("webhook-timestamp is more than 5 minutes from now")
    }
    const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8")
    const expected = Buffer.from(signWebhook(secret, id, Number(timestamp), text).slice(3), "base64")
    const matches = signatures.split(" ").some((candidate) => {
      const [version, signature] = candidate.split(",", 2)
      if (version !== "v1" || signature === undefined) return false
      const given = Buffer.from(signature, "base64")
      return given.length === expected.length && timingSafeEqual(given, expected)
    })
    if (!matches) {
      return yield* refused(
        "no signature matches: the body, the id or the timestamp was changed, or the secret is another"
      )
    }
    const event = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Event))(text).pipe(
      Effect.mapError(() => new WebhookVerificationError({ message: "the body is not an event of this service" }))
    )
    if (event.id !== id) return yield* refused("webhook-id is not the event's id")
    return event
  })
