import { describe, expect, it } from "vitest"
import { runSuite } from "../../src/index.ts"
import { DEFAULT_KEYS, type Deviation, type DeviationCase, DEVIATIONS } from "../fixture/deviations.ts"
import { FIXTURE_CORS_ORIGIN, startFixture } from "../fixture/server.ts"
import { idsWith, keysOf } from "./keys.ts"

/** Runs the whole suite against a fixture with each deviation, all at once, and expects a named check to fail. */
export const catchesEach = (deviations: ReadonlyArray<DeviationCase & { readonly name: Deviation }>) =>
  describe.concurrent("the suite catches each deviation", () => {
    it.each(deviations)("$name: $description", async (deviation) => {
      const daily = deviation.daily === true
      const fixture = await startFixture({
        deviation: deviation.name,
        recoverySeconds: 1,
        ...(daily ? { minuteSeconds: 2, enterpriseLimits: { perMinute: 5, perDay: 12 } } : {})
      })
      try {
        const result = await runSuite({
          baseUrl: fixture.baseUrl,
          keys: keysOf(fixture, deviation.keys ?? DEFAULT_KEYS),
          staffKey: fixture.staffKeys[0],
          ...(daily ? { daily: true, grep: "daily" } : {}),
          ...(deviation.grep === undefined ? {} : { grep: deviation.grep }),
          ...(deviation.webhooks === true ? { webhooks: {} } : {}),
          ...(deviation.cors === true ? { corsOrigin: FIXTURE_CORS_ORIGIN } : {}),
          ...(deviation.admin === true ? { admin: fixture.admin } : {})
        })
        const failed = idsWith(result, "fail")
        const caught = deviation.caughtBy.filter((id) => failed.includes(id))
        expect(
          caught,
          `expected one of ${deviation.caughtBy.join(", ")} to fail; failed: ${failed.join(", ") || "none"}`
        )
          .not.toHaveLength(0)
      } finally {
        await fixture.close()
      }
    })
  })

/** The deviations of the store area (beta): deviations.store.test.ts runs them. */
export const isAboutTheStore = (deviation: (typeof DEVIATIONS)[number]) =>
  deviation.caughtBy.every((id) => id.startsWith("store."))

/** The deviations of a value class (`values.*`, `contract.*`): deviations.values.test.ts runs them. */
export const isAboutValues = (deviation: (typeof DEVIATIONS)[number]) =>
  deviation.caughtBy.every((id) => /^(values|contract)\./.test(id))

/** The deviations of the events list (`events.*`): deviations.events.test.ts runs them. */
export const isAboutEvents = (deviation: (typeof DEVIATIONS)[number]) =>
  deviation.caughtBy.every((id) => id.startsWith("events."))

/** The deviations of webhook deliveries (`webhooks.*`): deviations.webhooks.test.ts runs them. */
export const isAboutWebhooks = (deviation: (typeof DEVIATIONS)[number]) =>
  deviation.caughtBy.every((id) => id.startsWith("webhooks."))

/** The deviations about pets, validation, authentication and error bodies; the others are about headers, quotas and extensions. */
export const isAboutResources = (deviation: (typeof DEVIATIONS)[number]) =>
  deviation.caughtBy.every((id) => /^(pets|validation|auth|errors)\./.test(id))
