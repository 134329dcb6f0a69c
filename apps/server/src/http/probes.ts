import { ServiceUnavailable } from "@petstore/contract"
import { Deferred, Effect, Scope } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { databaseReadiness } from "../db/readiness.ts"
import { Draining } from "../drain.ts"
import { databaseUnavailable, errorResponse } from "./errors.ts"
import { CurrentRequestFacts } from "./requestLog.ts"

/**
 * Liveness says the process serves requests; readiness says its database answers too, and it is not
 * draining. Probes that arrive while a readiness query runs share it, so a flood of probes costs one query
 * at a time, never more; nothing is kept after it ends, so no answer outlives the fault (or the recovery)
 * it saw: an earlier attempt that believed a success for a while was a suspect when a fleet's load
 * balancer took hosts out. The query runs in the routes' scope, not the probe's, so a probe whose client
 * goes away cannot cancel it for the others. Draining is read on every probe.
 */
export const HealthRoutes = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const database = yield* databaseReadiness
  const { isDraining } = yield* Draining
  const shuttingDown = new ServiceUnavailable({ message: "The server is shutting down" })
  const ready = HttpServerResponse.jsonUnsafe({ status: "ready", store: database.kind })
  const scope = yield* Scope.Scope
  let inFlight: Deferred.Deferred<boolean> | undefined
  const probe = Effect.suspend(() => {
    if (inFlight !== undefined) return Deferred.await(inFlight)
    const answer = Deferred.makeUnsafe<boolean>()
    inFlight = answer
    return database.answers.pipe(
      Effect.flatMap((isReady) => Deferred.succeed(answer, isReady)),
      // Interrupted only when the server stops: the probes waiting on it are answered "not ready".
      Effect.ensuring(Effect.suspend(() => {
        inFlight = undefined
        return Deferred.succeed(answer, false)
      })),
      Effect.forkIn(scope),
      Effect.andThen(Deferred.await(answer))
    )
  })
  yield* router.add(
    "GET",
    "/healthz",
    countedAs("/healthz", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok" })))
  )
  yield* router.add(
    "GET",
    "/readyz",
    countedAs(
      "/readyz",
      Effect.flatMap(isDraining, (draining) =>
        draining
          ? Effect.succeed(errorResponse(shuttingDown))
          : Effect.map(probe, (isReady) => isReady ? ready : errorResponse(databaseUnavailable)))
    )
  )
}))

/** Health answers count under their own path, not "unmatched": the readiness alerts read `http_requests_total{route="/readyz"}`. */
const countedAs = <A, E, R>(route: string, answer: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const facts = yield* CurrentRequestFacts
    facts.route = route
    return yield* answer
  })

/**
 * `/favicon.ico`, which browsers ask for beside every page (the docs page's included): 204, no icon, so
 * that it is not a 404 in every browser's log. It costs nothing, so it spends no quota, like the probes;
 * browsers keep the answer a day.
 */
export const FaviconRoute = HttpRouter.add(
  "GET",
  "/favicon.ico",
  countedAs(
    "/favicon.ico",
    Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { "cache-control": "public, max-age=86400" } }))
  )
)
