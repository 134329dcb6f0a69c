import type { Reporter, TestModule, Vitest } from "vitest/node"

/**
 * Says once, at the end of a run, which tests needing PostgreSQL were skipped
 * (those tagged `postgres`, without DATABASE_URL) and how many: each suite
 * file runs in a worker of its own, so no file can say it for the run.
 */
export default class SkippedPostgresReporter implements Reporter {
  private vitest: Vitest | undefined

  onInit(vitest: Vitest) {
    this.vitest = vitest
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const bySuite = new Map<string, number>()
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        if (!test.tags.includes("postgres") || test.result().state !== "skipped") continue
        const suite = test.fullName.split(" > ")[0]!
        bySuite.set(suite, (bySuite.get(suite) ?? 0) + 1)
      }
    }
    const total = [...bySuite.values()].reduce((sum, count) => sum + count, 0)
    if (total === 0) return
    const suites = [...bySuite].map(([suite, count]) => `${suite} (${count})`).join(", ")
    this.vitest?.logger.log(
      `DATABASE_URL is not set: skipped the ${total} tests that need PostgreSQL, in ${suites}. ` +
        "Set DATABASE_URL to a PostgreSQL database to run them too (CI does)."
    )
  }
}
