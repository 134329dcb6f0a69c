import { Cause, Deferred, Effect, Exit } from "effect"
import type { Http } from "./http.ts"
import { type CheckFailed, type CheckResult, CheckSkipped, type Tag } from "./model.ts"

export interface Check {
  /** Stable identifier, e.g. `pets.list-limit-1` or `free.burst`; `--grep` matches it as well as the title. */
  readonly id: string
  readonly area: string
  readonly tag: Tag
  readonly title: string
  /** Checks of the same phase whose passing this one builds on; they run first even when not selected. */
  readonly requires?: ReadonlyArray<string>
  readonly run: Effect.Effect<void, CheckFailed | CheckSkipped, Http>
}

/**
 * Checks that run one after the other because they share state or a key's
 * quota. Phases run concurrently, except that a phase waits for those in `after`.
 */
export interface Phase {
  readonly name: string
  readonly after?: ReadonlyArray<string>
  readonly checks: ReadonlyArray<Check>
}

export const skipped = (reason: string) => new CheckSkipped({ reason })

/** A check that cannot run in this configuration, reported as skipped with the reason. */
export const skippedCheck = (check: Omit<Check, "run">, reason: string): Check => ({
  ...check,
  run: Effect.fail(skipped(reason))
})

export interface Selection {
  readonly only?: Tag | undefined
  readonly grep?: string | undefined
}

export const isSelected = (selection: Selection) => (check: Check) =>
  (selection.only === undefined || check.tag === selection.only) &&
  (selection.grep === undefined || `${check.id} ${check.title}`.toLowerCase().includes(selection.grep.toLowerCase()))

/** The selected checks of the phase and, transitively, the checks they require. */
const checksToRun = (phase: Phase, selected: (check: Check) => boolean) => {
  const byId = new Map(phase.checks.map((check) => [check.id, check]))
  const needed = new Set<string>()
  const need = (check: Check) => {
    if (needed.has(check.id)) return
    needed.add(check.id)
    for (const id of check.requires ?? []) {
      const required = byId.get(id)
      if (required !== undefined) need(required)
    }
  }
  phase.checks.filter(selected).forEach(need)
  return phase.checks.filter((check) => needed.has(check.id))
}

const defectMessage = (cause: Cause.Cause<unknown>) => {
  const squashed = Cause.squash(cause)
  return squashed instanceof Error ? `${squashed.name}: ${squashed.message}` : String(squashed)
}

const runCheck = (check: Check, unmet: CheckResult | undefined) =>
  Effect.gen(function*() {
    const started = Date.now()
    const base = { id: check.id, title: check.title, tag: check.tag, area: check.area }
    if (unmet !== undefined) {
      // What kept the required check from running keeps this one too: say so in the same words.
      const reason = unmet.status === "skip" && unmet.reason !== undefined
        ? unmet.reason
        : `needs "${unmet.title}", which failed`
      return { ...base, status: "skip", reason, durationMs: 0 } satisfies CheckResult
    }
    const exit = yield* Effect.exit(check.run)
    const durationMs = Date.now() - started
    if (Exit.isSuccess(exit)) return { ...base, status: "pass", durationMs } satisfies CheckResult
    const error = Cause.findErrorOption(exit.cause)
    if (error._tag === "Some") {
      return error.value._tag === "CheckSkipped"
        ? { ...base, status: "skip", reason: error.value.reason, durationMs } satisfies CheckResult
        : {
          ...base,
          status: "fail",
          failure: {
            ...(error.value.request === undefined ? {} : { request: error.value.request }),
            expected: error.value.expected,
            received: error.value.received
          },
          durationMs
        } satisfies CheckResult
    }
    // A bug of the suite, or of a response it did not foresee: reported, and the run goes on.
    return {
      ...base,
      status: "fail",
      failure: {
        expected: "the check to run to completion",
        received: `the suite failed: ${defectMessage(exit.cause)}`
      },
      durationMs
    } satisfies CheckResult
  })

/**
 * Runs the phases (each in order, all concurrently unless `after` says
 * otherwise) and reports every selected check's result as soon as it is known.
 */
export const runPhases = (
  phases: ReadonlyArray<Phase>,
  selected: (check: Check) => boolean,
  report: (result: CheckResult) => void
) =>
  Effect.gen(function*() {
    const finished = new Map<string, Deferred.Deferred<void>>()
    for (const phase of phases) finished.set(phase.name, yield* Deferred.make<void>())
    const results = new Map<string, CheckResult>()

    const runPhase = (phase: Phase) =>
      Effect.gen(function*() {
        for (const name of phase.after ?? []) {
          const before = finished.get(name)
          if (before !== undefined) yield* Deferred.await(before)
        }
        const outcomes = new Map<string, CheckResult>()
        for (const check of checksToRun(phase, selected)) {
          const unmet = (check.requires ?? []).map((id) => outcomes.get(id)).find((r) =>
            r !== undefined && r.status !== "pass"
          )
          const result = yield* runCheck(check, unmet)
          outcomes.set(check.id, result)
          if (selected(check)) {
            results.set(check.id, result)
            report(result)
          }
        }
      }).pipe(Effect.ensuring(Deferred.succeed(finished.get(phase.name)!, undefined)))

    yield* Effect.forEach(phases, runPhase, { concurrency: "unbounded", discard: true })
    // Reported in catalogue order, whatever order they finished in.
    return phases.flatMap((phase) => phase.checks.flatMap((check) => results.get(check.id) ?? []))
  })
