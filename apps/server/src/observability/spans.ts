import { Effect, References } from "effect"

/**
 * A service method's span, for the OTLP exporter, used as `Effect.fnUntraced(body, traced("Service.method"))`:
 * `Effect.withSpan(name)` when tracing is on, and nothing at all when it is off (no collector configured).
 *
 * Why not `Effect.fn("Service.method")`: on every call it captures the call site's stack and gives the fiber a
 * new context for it, and it makes a span even when tracing is off (a no-op one, provided as the parent span:
 * another new context). A list request calls four such methods; together they cost about a quarter of its
 * CPU (bench/RESULTS.md, "Issue 15, second round").
 */
export const traced = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => fiber.getRef(References.TracerEnabled) ? Effect.withSpan(effect, name) : effect)
