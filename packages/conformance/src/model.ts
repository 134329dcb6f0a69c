import { Data } from "effect"

/**
 * `spec`: mandated by the interface spec, so it must hold for any implementation.
 * `extension`: a choice this implementation documents in its README.
 */
export type Tag = "spec" | "extension"

export const PLANS = ["free", "pro", "business", "enterprise"] as const
export type Plan = (typeof PLANS)[number]

export interface ApiKey {
  /** The key's plan; `staff` for the staff key, whose plan the suite does not need to know. */
  readonly plan: Plan | "staff"
  readonly secret: string
  /** How the key appears in output: its plan and position, never the secret. */
  readonly label: string
}

/** What a failed check shows: the request it sent, what it expected and what came back. */
export interface Failure {
  readonly request?: string
  readonly expected: string
  readonly received: string
}

export type CheckStatus = "pass" | "fail" | "skip"

export interface CheckResult {
  readonly id: string
  readonly title: string
  readonly tag: Tag
  readonly area: string
  readonly status: CheckStatus
  /** Why the check was skipped. */
  readonly reason?: string
  readonly failure?: Failure
  readonly durationMs: number
}

export interface Summary {
  readonly passed: number
  readonly failed: number
  readonly skipped: number
}

export interface SuiteResult {
  readonly runId: string
  readonly baseUrl: string
  readonly startedAt: string
  readonly durationMs: number
  readonly results: ReadonlyArray<CheckResult>
  readonly summary: Summary
  /** False when the run stopped before every selected check had run; `incomplete` then says why. */
  readonly complete: boolean
  /** Why the run stopped early (`interrupted by SIGINT`, `--max-duration (20 min) ran out`, …) and how many checks did not run. */
  readonly incomplete?: { readonly reason: string; readonly notRun: number }
  /** The schema-driven phase, when it ran: its seed (replay with `--seed`), the requests it sent and how long it took. */
  readonly fuzz?: { readonly seed: number; readonly sent: number; readonly durationMs: number }
  /** The OpenAPI document every response was checked against, when one was found: how many responses it judged, how many it contradicts. */
  readonly openapi?: { readonly url: string; readonly checked: number; readonly broken: number }
}

export class CheckFailed extends Data.TaggedError("CheckFailed")<Failure> {}

export class CheckSkipped extends Data.TaggedError("CheckSkipped")<{ readonly reason: string }> {}

/** Nothing listens at the base URL, or its host does not resolve: a usage problem rather than a finding about the service. */
export class Unreachable extends Data.TaggedError("Unreachable")<{ readonly baseUrl: string; readonly cause: string }> {
  override get message() {
    return `cannot reach ${this.baseUrl}: ${this.cause}`
  }
}

export const summarize = (results: ReadonlyArray<CheckResult>): Summary => ({
  passed: results.filter((result) => result.status === "pass").length,
  failed: results.filter((result) => result.status === "fail").length,
  skipped: results.filter((result) => result.status === "skip").length
})
