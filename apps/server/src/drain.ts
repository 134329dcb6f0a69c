import { Context, Effect, Layer } from "effect"
import { AppConfig } from "./config.ts"

/**
 * Behind a load balancer, a host that closed its listener at SIGTERM would
 * still be sent requests until the balancer's health checks noticed, and a
 * request sent on a pooled connection just as the host closes it is lost. So
 * with SHUTDOWN_DRAIN_SECONDS the host first drains: /readyz answers 503 while
 * every other request is served as usual, the balancer takes the host out of
 * rotation, and only then does the shutdown proceed (listener closed, requests
 * in flight finished).
 */
export class Draining extends Context.Service<Draining, {
  readonly isDraining: Effect.Effect<boolean>
  readonly begin: Effect.Effect<void>
}>()("@petstore/server/Draining") {
  static readonly layer = Layer.sync(Draining, () => {
    let draining = false
    return Draining.of({
      isDraining: Effect.sync(() => draining),
      begin: Effect.sync(() => {
        draining = true
      })
    })
  })
}

/**
 * Runs the drain when the server shuts down. Its finalizer must run before the
 * listeners close, so this layer is built after them (finalizers run in reverse).
 */
export const DrainBeforeClosing = Layer.effectDiscard(Effect.gen(function*() {
  const { shutdownDrainSeconds } = yield* AppConfig
  const draining = yield* Draining
  if (shutdownDrainSeconds === 0) return
  yield* Effect.addFinalizer(() =>
    draining.begin.pipe(
      Effect.andThen(
        Effect.logInfo("draining: /readyz answers 503 until the listeners close").pipe(
          Effect.annotateLogs({ seconds: shutdownDrainSeconds })
        )
      ),
      Effect.andThen(Effect.sleep(`${shutdownDrainSeconds} seconds`))
    )
  )
}))
