import { expect, it } from "vitest"
import { runSuite } from "../src/index.ts"
import { DEVIATIONS } from "./fixture/deviations.ts"
import { startFixture } from "./fixture/server.ts"
import { catchesEach, isAboutWebhooks } from "./support/deviationRuns.ts"

// Webhook deliveries (an extension, checked with --webhooks): only the webhooks checks run, against the fixture's sender.
it("the fixture's webhook sender, undeviated, passes every webhooks check", async () => {
  const fixture = await startFixture()
  try {
    const result = await runSuite({
      baseUrl: fixture.baseUrl,
      keys: { pro: [fixture.keys.pro[0]!] },
      grep: "webhooks.",
      webhooks: {}
    })
    expect(
      result.results.map((check) =>
        `${check.id} ${check.status}${check.failure === undefined ? "" : ` ${JSON.stringify(check.failure)}`}`
      )
    )
      .toEqual([
        "webhooks.register pass",
        "webhooks.headers pass",
        "webhooks.signature pass",
        "webhooks.payloads pass",
        "webhooks.retry-same-id pass",
        "webhooks.gone-disables pass",
        "webhooks.events-catch-up pass",
        "webhooks.delete pass"
      ])
  } finally {
    await fixture.close()
  }
})

catchesEach(DEVIATIONS.filter(isAboutWebhooks))
