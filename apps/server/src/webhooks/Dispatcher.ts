import { signWebhook } from "@petstore/contract"
import { Clock, Context, Effect, Layer, Metric, Option, Schedule } from "effect"
import { AppConfig } from "../config.ts"
import { Database } from "../db/Database.ts"
import { type AttemptOutcome, type ClaimedDelivery, Deliveries, type FinishedAttempt } from "./Deliveries.ts"
import { type AddressPolicy, postWebhook, type Resolve, systemResolve, type WebhookResponse } from "./safeRequest.ts"
import { DISABLE_AFTER_MILLIS, nextDelayMillis, retryAfterMillis } from "./schedule.ts"

/** How host names are resolved for deliveries; tests replace it to play DNS rebinding. */
export const WebhookResolver = Context.Reference<Resolve>("@petstore/server/webhooks/WebhookResolver", {
  defaultValue: () => systemResolve
})

/** Deliveries claimed at once by one process. */
export const CLAIM_BATCH = 16
/** Without a wake-up, due deliveries (retries, other hosts' events when a NOTIFY was lost) are looked for this often. */
export const POLL_MILLIS = 1_000
/** After a wake-up, this long for more work to arrive, so that one claim takes a burst. */
export const WAKE_COALESCE_MILLIS = 10

const deliveries = Metric.counter("webhook_deliveries_total", {
  description: "Delivery attempts, by outcome (succeeded, retry, gave_up, disabled)"
})
const deliveryLag = Metric.histogram("webhook_delivery_lag_seconds", {
  description: "From the commit of an event's change to a receiver's 2xx",
  boundaries: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600]
})
const outboxDepth = Metric.gauge("webhook_outbox_depth", { description: "Deliveries queued and not yet finished" })
const outboxOldestDue = Metric.gauge("webhook_outbox_oldest_due_seconds", {
  description: "How long the oldest due delivery has waited"
})
const endpointsDisabled = Metric.counter("webhook_endpoints_disabled_total", {
  description: "Endpoints the service disabled, by reason (gone, failing)"
})

const outcomeName = (outcome: AttemptOutcome) =>
  outcome._tag === "Succeeded"
    ? "succeeded"
    : outcome._tag === "Retry"
    ? "retry"
    : outcome._tag === "GiveUp"
    ? "gave_up"
    : "disabled"

/** The headers of one attempt (Standard Webhooks): the same id on every attempt, a signature per secret in force. */
export const signedHeaders = (delivery: ClaimedDelivery, timestampSeconds: number, body: string) => ({
  "content-type": "application/json",
  "user-agent": "petstore-webhooks/1",
  "webhook-id": delivery.event.id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": delivery.secrets.map((secret) => signWebhook(secret, delivery.event.id, timestampSeconds, body))
    .join(" ")
})

/** What follows an answer (or its absence) to attempt `attempt`. */
export const outcomeOf = (
  delivery: ClaimedDelivery,
  nowMillis: number,
  answer: { readonly response?: WebhookResponse; readonly error?: string },
  random: number
): { readonly outcome: AttemptOutcome; readonly error: string | null } => {
  const status = answer.response?.status
  if (status !== undefined && status >= 200 && status < 300) return { outcome: { _tag: "Succeeded" }, error: null }
  if (status === 410) {
    return { outcome: { _tag: "Disable", reason: "the receiver answered 410 Gone" }, error: "410 Gone" }
  }
  const error = answer.error ??
    (status !== undefined && status >= 300 && status < 400 ? `redirect ${status} not followed` : `answered ${status}`)
  const failingSince = Option.getOrElse(delivery.failingSince, () => new Date(nowMillis)).getTime()
  if (nowMillis - failingSince >= DISABLE_AFTER_MILLIS) {
    return { outcome: { _tag: "Disable", reason: "deliveries failed for 5 days" }, error }
  }
  const honoured = status === 429 || status === 502 || status === 503 || status === 504
    ? retryAfterMillis(answer.response?.retryAfter, nowMillis)
    : undefined
  const delay = nextDelayMillis(delivery.attempt, random, honoured)
  return delay === undefined
    ? { outcome: { _tag: "GiveUp" }, error }
    : { outcome: { _tag: "Retry", at: new Date(nowMillis + delay) }, error }
}

/**
 * Delivers queued events: every process of every host does, each claiming
 * with `FOR UPDATE SKIP LOCKED` (`Deliveries.claim`), so in normal operation an
 * event reaches an endpoint once. A NOTIFY from the transaction that queued
 * work wakes it at once; it polls as well, for retries and lost notifications.
 * `WEBHOOK_DELIVERY=false` keeps a process from delivering.
 */
export class Dispatcher extends Context.Service<Dispatcher, {
  /** Claims what is due now and delivers it; returns how many it claimed. */
  readonly runOnce: Effect.Effect<number>
}>()("@petstore/server/webhooks/Dispatcher") {
  static readonly layer = Layer.effect(
    Dispatcher,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const db = yield* Database
      const queue = yield* Deliveries
      const policy: AddressPolicy = {
        allowHttp: config.webhookAllowHttp,
        allowPrivateAddresses: config.webhookAllowPrivateAddresses
      }

      /** One attempt: the request, and what follows from its answer. Recorded with its batch. */
      const attempt = Effect.fnUntraced(function*(delivery: ClaimedDelivery) {
        const resolve = yield* WebhookResolver
        const startedMillis = yield* Clock.currentTimeMillis
        const body = JSON.stringify(delivery.event)
        const headers = signedHeaders(delivery, Math.floor(startedMillis / 1000), body)
        const started = performance.now()
        const answer = yield* Effect.promise(() =>
          postWebhook(delivery.url, headers, body, policy, resolve).then(
            (response) => ({ response }),
            (error: Error) => ({ error: error.message || String(error) })
          )
        )
        const latencyMs = Math.round(performance.now() - started)
        const nowMillis = yield* Clock.currentTimeMillis
        const { outcome, error } = outcomeOf(delivery, nowMillis, answer, Math.random())
        const finished: FinishedAttempt = {
          delivery,
          record: {
            attemptedAt: new Date(startedMillis),
            statusCode: "response" in answer ? answer.response.status : null,
            latencyMs,
            error: error?.slice(0, 500) ?? null
          },
          outcome
        }
        return { finished, nowMillis }
      })

      const recorded = Effect.fnUntraced(
        function*({ finished, nowMillis }: { finished: FinishedAttempt; nowMillis: number }) {
          const { delivery, outcome } = finished
          yield* Metric.update(Metric.withAttributes(deliveries, { outcome: outcomeName(outcome) }), 1)
          if (outcome._tag === "Succeeded") {
            yield* Metric.update(deliveryLag, Math.max(0, nowMillis - delivery.occurredAt.getTime()) / 1000)
          }
          if (outcome._tag === "Disable") {
            yield* Metric.update(
              Metric.withAttributes(endpointsDisabled, { reason: outcome.reason.includes("410") ? "gone" : "failing" }),
              1
            )
            yield* Effect.logWarning("webhook endpoint disabled").pipe(
              Effect.annotateLogs({ endpointId: delivery.endpointId, reason: outcome.reason })
            )
          }
        }
      )

      const runOnce = Effect.gen(function*() {
        const now = new Date(yield* Clock.currentTimeMillis)
        const claimed = yield* queue.claim(now, CLAIM_BATCH)
        const attempts = yield* Effect.forEach(claimed, attempt, { concurrency: "unbounded" })
        // Not recorded (the database went away meanwhile): the leases run out and the deliveries are made again.
        yield* queue.finish(attempts.map((a) => a.finished))
        yield* Effect.forEach(attempts, recorded, { discard: true })
        return claimed.length
      }).pipe(
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("webhook delivery round failed").pipe(Effect.annotateLogs({ cause: String(error) })),
            0
          )
        )
      )

      if (config.webhookDelivery) {
        let pending = false
        let wake: (() => void) | undefined
        const notified = () => {
          pending = true
          const resume = wake
          wake = undefined
          resume?.()
        }
        const woken = Effect.callback<void>((resume) => {
          if (pending) {
            pending = false
            return resume(Effect.void)
          }
          wake = () => {
            pending = false
            resume(Effect.void)
          }
        })
        // A wake-up hint only: lost on a disconnect (postgres.js listens again), and polling covers it.
        yield* db.listen("webhook_messages", notified).pipe(
          Effect.catch((error) =>
            Effect.logWarning("webhook wake-ups unavailable; polling").pipe(
              Effect.annotateLogs({ cause: String(error) })
            )
          )
        )
        const loop = Effect.gen(function*() {
          // A round in flight at shutdown (SIGTERM) finishes and records what it delivered, within the 15 s
          // delivery timeout: interrupted, its claims would wait out their leases and reach receivers twice.
          const claimed = yield* Effect.uninterruptible(runOnce)
          if (claimed < CLAIM_BATCH) {
            yield* Effect.race(Effect.sleep(POLL_MILLIS), woken)
            // A burst of commits wakes once: what they queued is claimed together.
            yield* Effect.sleep(WAKE_COALESCE_MILLIS)
          }
        }).pipe(Effect.forever)
        yield* Effect.forkScoped(loop)
        yield* queue.depth.pipe(
          Effect.flatMap(({ queued, oldestDueSeconds }) =>
            Effect.andThen(Metric.update(outboxDepth, queued), Metric.update(outboxOldestDue, oldestDueSeconds))
          ),
          Effect.ignore,
          Effect.repeat(Schedule.spaced("10 seconds")),
          Effect.forkScoped
        )
      }

      return Dispatcher.of({ runOnce })
    })
  )
}
