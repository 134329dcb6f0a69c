import { Cause, Clock, Context, Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import { recordRequestUnsafe } from "../observability/metrics.ts"
import { renderUnrouted, withRequestIdInErrorBody } from "./errors.ts"
import type { Admission } from "./admission.ts"
import { refuseUnroutableTargets } from "./requestTarget.ts"

/** What the routes learn about a request that belongs on its log line, and its quota admission. */
export interface RequestFacts {
  route?: string
  keyId?: string
  plan?: string
  quota?: "admitted" | "limited" | "banned" | "not_spent"
  /** Quota admission's decision, for the route (quotaAdmission.ts's `currentAdmission`); not logged. */
  admission?: Admission
}

/** The current request's facts, filled in by the routes as they learn them (a fresh object per request). */
export const CurrentRequestFacts = Context.Reference<RequestFacts>("@petstore/server/http/CurrentRequestFacts", {
  defaultValue: () => ({})
})

/** A client's request id is kept when it is short and plain; anything else is replaced. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Global middleware of a listener: refuses what no route may see (requestTarget.ts), gives every request an id (the client's
 * `X-Request-Id` when sane, else a new one), echoes it on the response and in an error's body, puts it
 * on every log line of the request, and writes one structured line per request.
 *
 * It runs on every request, so it reads what it needs from the fiber at once
 * (the request, the clock, the metrics' context) rather than as effects of
 * their own; the line and the metrics are the same.
 */
export const requestLog = HttpRouter.middleware((httpEffect) =>
  Effect.withFiber((fiber) => {
    const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
    const given = request.headers["x-request-id"]
    const requestId = given !== undefined && SANE_REQUEST_ID.test(given) ? given : randomUUID()
    const facts: RequestFacts = {}
    const clock = fiber.getRef(Clock.Clock)
    const startedAt = clock.currentTimeNanosUnsafe()
    const logLine = (status: number) =>
      Effect.withFiber((fiber) => {
        const durationMs = Number(clock.currentTimeNanosUnsafe() - startedAt) / 1e6
        // Unmatched paths are not templates: one series for all of them keeps the metrics bounded.
        recordRequestUnsafe(fiber.context, facts.route ?? "unmatched", status, durationMs / 1000)
        return Effect.logInfo("request").pipe(Effect.annotateLogs({
          requestId,
          method: request.method,
          // The path as sent: `new URL` would throw on a target such as `//a:99999/x`.
          route: facts.route ?? request.url.split("?")[0],
          status,
          durationMs: Math.round(durationMs * 100) / 100,
          ...(facts.keyId !== undefined ? { keyId: facts.keyId, plan: facts.plan } : {}),
          ...(facts.quota !== undefined ? { quota: facts.quota } : {})
        }))
      })
    return refuseUnroutableTargets(httpEffect).pipe(
      // What no route answered is answered here, so that it too carries the request's id.
      Effect.catchCause(renderUnrouted),
      Effect.provideService(CurrentRequestFacts, facts),
      // 499: the client went away before the answer (nginx's convention).
      Effect.tapCause((cause) => logLine(Cause.hasInterruptsOnly(cause) ? 499 : 500)),
      Effect.annotateLogs({ requestId }),
      Effect.flatMap((response) =>
        Effect.as(
          logLine(response.status),
          HttpServerResponse.setHeader(withRequestIdInErrorBody(response, requestId), "x-request-id", requestId)
        )
      )
    )
  }), { global: true })
