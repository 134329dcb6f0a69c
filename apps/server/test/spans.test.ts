import { Effect, Option, References } from "effect"
import { describe, expect, it } from "vitest"
import { traced } from "../src/observability/spans.ts"

/** The name of the span the method's body runs in, if any. */
const method = Effect.fnUntraced(function*() {
  return Option.map(yield* Effect.option(Effect.currentSpan), (span) => span.name)
}, traced("Service.method"))

describe("traced service methods", () => {
  it("run in a span of their name when tracing is on", () => {
    expect(Effect.runSync(method())).toEqual(Option.some("Service.method"))
  })

  // Effect.withSpan alone would still make a (no-op) span here, and the body would see it.
  it("run in no span at all when tracing is off (no collector)", () => {
    expect(Effect.runSync(method().pipe(Effect.provideService(References.TracerEnabled, false)))).toEqual(Option.none())
  })
})
