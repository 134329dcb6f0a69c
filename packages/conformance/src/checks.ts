import { Cause, Deferred, Effect, Exit } from "effect"
import { Http } from "./http.ts"
import { CheckFailed, type CheckResult, CheckSkipped, type Tag } from "./model.ts"

export interface Check {
  /** Stable identifier, e.g. `pets.list-limit-1` or `free.burst`; `--grep` matches it as well as the title. */
  readonly id: string
  readonly area: string
  readonly tag: Tag
  readonly title: string
  /** Checks of the same phase whose passing this one builds on; they run first even when not selected. */
  readonly requires?: ReadonlyArray<string>
  /** The most requests the check sends; the run's per-check bound when not given. */
  readonly maxRequests?: number
  /** How much longer than the run's per-check time bound the check may take: the pacing of a daily quota. */
  readonly extraSeconds?: number
  readonly run: Effect.Effect<void, CheckFailed | CheckSkipped, Http>
}

/** What bounds every check: the time it may take and the requests it may send. */
export interface CheckBounds {
  readonly seconds: number
  readonly requests: number
}

/** The run's record, kept as it goes so that a run stopped early still reports what it checked. */
export interface Ledger {
  /** Every selected check's result, as soon as it is known. */
  readonly results: Map<string, CheckResult>
  /** The selected checks running now, by id. */
  readonly running: Map<string, { readonly check: Check; readonly startedAt: number }>
}

export const makeLedger = (): Ledger => ({ results: new Map(), running: new Map() })

/** A duration as the options spell it: `90 s`, `20 min`, `2 h`. */
export const formatSeconds = (seconds: number) =>
  seconds % 3600 === 0 && seconds >= 3600
    ? `${seconds / 3600} h`
    : seconds % 60 === 0 && seconds >= 60
    ? `${seconds / 60} min`
    : `${seconds} s`

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

export const isSelected = (selection: Selection) => (check: Pick<Check, "id" | "title" | "tag">) =>
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

/** The service as one check sees it: past its bound, a request fails the check instead of going out. */
const bounded = (http: Http["Service"], most: number): Http["Service"] => {
  let sent = 0
  return Http.of({
    ...http,
    send: (options) =>
      Effect.suspend(() =>
        ++sent > most
          ? Effect.fail(
            new CheckFailed({
              request: `${options.method ?? "GET"} ${options.path}, request ${sent} of this check`,
              expected: `an outcome within ${most} requests, the most this check sends`,
              received: `the service's answers kept the check going past ${most} requests`
            })
          )
          : http.send(options)
      )
  })
}

const runCheck = (check: Check, unmet: CheckResult | undefined, bounds: CheckBounds) =>
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
    const http = yield* Http
    const seconds = bounds.seconds + (check.extraSeconds ?? 0)
    const exit = yield* Effect.exit(
      check.run.pipe(
        Effect.provideService(Http, bounded(http, check.maxRequests ?? bounds.requests)),
        Effect.timeoutOrElse({
          duration: seconds * 1000,
          orElse: () =>
            Effect.fail(
              new CheckFailed({
                expected: `the check to end within ${formatSeconds(seconds)} (--check-timeout)`,
                received: "it had not ended: the service's answers were too slow, or kept it waiting"
              })
            )
        })
      )
    )
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
  report: (result: CheckResult) => void,
  bounds: CheckBounds,
  ledger: Ledger = makeLedger()
) =>
  Effect.gen(function*() {
    const finished = new Map<string, Deferred.Deferred<void>>()
    for (const phase of phases) finished.set(phase.name, yield* Deferred.make<void>())
    const { results, running } = ledger

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
          if (selected(check)) running.set(check.id, { check, startedAt: Date.now() })
          const result = yield* runCheck(check, unmet, bounds)
          running.delete(check.id)
          outcomes.set(check.id, result)
          if (selected(check)) {
            results.set(check.id, result)
            report(result)
          }
        }
      }).pipe(Effect.ensuring(Deferred.succeed(finished.get(phase.name)!, undefined)))

    yield* Effect.forEach(phases, runPhase, { concurrency: "unbounded", discard: true })
    return inCatalogueOrder(phases, results)
  })

/** Results in catalogue order, whatever order they finished in. */
export const inCatalogueOrder = (phases: ReadonlyArray<Phase>, results: ReadonlyMap<string, CheckResult>) =>
  phases.flatMap((phase) => phase.checks.flatMap((check) => results.get(check.id) ?? []))
