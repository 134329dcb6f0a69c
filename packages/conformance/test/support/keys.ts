import type { CheckResult, Plan, SuiteResult } from "../../src/index.ts"
import type { Fixture } from "../fixture/server.ts"

/** The first `count` keys of each plan of the fixture. */
export const keysOf = (fixture: Fixture, counts: Readonly<Partial<Record<Plan, number>>>) =>
  Object.fromEntries(
    Object.entries(counts).map(([plan, count]) => [plan, fixture.keys[plan as Plan].slice(0, count)])
  ) as Partial<Record<Plan, ReadonlyArray<string>>>

export const idsWith = (result: SuiteResult, status: CheckResult["status"]) =>
  result.results.filter((check) => check.status === status).map((check) => check.id)

/** Failures as readable text, so that a failing assertion shows what the suite saw. */
export const failures = (result: SuiteResult) =>
  result.results
    .filter((check) => check.status === "fail")
    .map((check) =>
      `${check.id}: expected ${check.failure?.expected}; received ${check.failure?.received}; request ${check.failure?.request}`
    )
