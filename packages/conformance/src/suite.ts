import { Cause, Data, Effect, Exit } from "effect"
import { randomBytes } from "node:crypto"
import {
  type Check,
  formatSeconds,
  inCatalogueOrder,
  isSelected,
  makeLedger,
  type Phase,
  runPhases,
  skipped
} from "./checks.ts"
import type { RunContext } from "./context.ts"
import { DEFAULT_FUZZ_REQUESTS, fuzzChecks } from "./fuzz.ts"
import { generalPhase } from "./general.ts"
import { specChecks } from "./specChecks.ts"
import { valueChecks } from "./valueChecks.ts"
import { corsPhase } from "./cors.ts"
import { type AdminAccess, makeAdmin, normalizeAdminUrl, probeAdmin } from "./admin.ts"
import { keyLifePhase } from "./keyLife.ts"
import { eventsPhase } from "./events.ts"
import { type WebhookOptions, webhooksPhase } from "./webhooks.ts"
import { anonymous, Http, makeHttp, probe, withKey } from "./http.ts"
import { makeObservations } from "./invariants.ts"
import {
  type ApiKey,
  CheckFailed,
  type CheckResult,
  type Plan,
  PLANS,
  summarize,
  type SuiteResult,
  Unreachable
} from "./model.ts"
import { planPhase } from "./plans.ts"
import { documentCheck, loadDocument, type LoadedDocument } from "./openapiCheck.ts"
import { storePhase } from "./store.ts"
import { lastFour, scrubber } from "./secrets.ts"

export interface SuiteOptions {
  /** The service's base URL, including `/v1`. */
  readonly baseUrl: string
  /** API keys by plan. The first key of a plan serves the general checks; the others are set aside to exhaust windows. */
  readonly keys?: Partial<Record<Plan, ReadonlyArray<string>>>
  /** A key with the `staff` role, for the store checks only staff may run; without it they are skipped. */
  readonly staffKey?: string | undefined
  /** `spec`: only the checks the interface spec mandates. */
  readonly only?: "spec"
  /** Only the checks whose id or title contains this text (case-insensitive). */
  readonly grep?: string
  /** Also spend each plan's daily quota: a long run. */
  readonly daily?: boolean
  /** The longest the run waits for a key to be admitted again. Default 120 s. */
  readonly maxWaitSeconds?: number
  /** Each check's result, as soon as it is known. */
  readonly onResult?: (result: CheckResult) => void
  /** What a long phase is doing (spending a quota, waiting for Retry-After). */
  readonly onProgress?: (line: string) => void
  /** Requests of the schema-driven phase (the method probes come on top); 0 turns it off. Default 50. */
  readonly fuzz?: number
  /** The schema-driven phase's seed, to replay a run. Default: a random one, reported in the result. */
  readonly seed?: number
  /** The deployment's OpenAPI document, which every response is checked against. Default `<base URL>/openapi.json` when it exists; `false`: none. */
  readonly openapi?: string | false
  /** An origin the deployment allows for CORS (`--cors-origin`); without it the CORS checks are skipped. */
  readonly corsOrigin?: string | undefined
  /** Check webhook deliveries with a receiver of the run (`--webhooks`); without it the webhooks checks are skipped. */
  readonly webhooks?: WebhookOptions
  /**
   * The deployment's admin API (`--admin-url`, the token from CONFORMANCE_ADMIN_TOKEN or `--admin-token-file`), for
   * the keys.* checks, which make keys of their own and revoke them; without it they are skipped. Nothing the suite
   * reports shows the token.
   */
  readonly admin?: AdminAccess | undefined
  /** How long one request may wait for its whole answer. Default 30 s. */
  readonly requestTimeoutSeconds?: number
  /** How long one check may take (a daily quota's pacing comes on top). Default 300 s. */
  readonly checkTimeoutSeconds?: number
  /** The most requests one check sends (a plan's burst and day, and the schema-driven phase, have their own). Default 1,000. */
  readonly maxRequestsPerCheck?: number
  /** How long the whole run may take; then it stops, reporting what it checked. Default 20 min, or 3 h with `daily`. */
  readonly maxDurationSeconds?: number
  /** Completes, with the reason, when the run must stop now (a signal): it ends at once, reporting what it checked. */
  readonly stop?: Effect.Effect<string>
}

export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30
export const DEFAULT_CHECK_TIMEOUT_SECONDS = 300
export const DEFAULT_MAX_REQUESTS_PER_CHECK = 1_000
/** Room for every plan's minute windows with a single free key (some 6 min), and a slow service. */
export const DEFAULT_MAX_DURATION_SECONDS = 20 * 60
/** Room for business's day (100,000 requests paced at 1,000 a minute: about 100 min). */
export const DEFAULT_MAX_DURATION_DAILY_SECONDS = 3 * 60 * 60

export class InvalidOptions extends Data.TaggedError("InvalidOptions")<{ readonly message: string }> {}

export interface RefusedKey {
  readonly plan: Plan | "staff"
  /** The key's plan and position among the keys given, e.g. `free key 2`. */
  readonly label: string
  readonly lastFour: string
  readonly status: number
}

/** Keys the service answered 401 or 403 before any check ran: the run would only find that out check by check. */
export class InvalidKeys extends Data.TaggedError("InvalidKeys")<{ readonly refused: ReadonlyArray<RefusedKey> }> {
  override get message() {
    const which = this.refused.map((key) => `${key.label} (${key.lastFour}) got ${key.status}`).join(", ")
    return `the service refused ${this.refused.length === 1 ? "a key" : `${this.refused.length} keys`}: ${which}. ` +
      "Give keys this service issued and has not revoked"
  }
}

/** Plans in the order their first key is preferred for the general checks: the most room first. */
const GENERAL_KEY_PREFERENCE: ReadonlyArray<Plan> = ["business", "enterprise", "pro", "free"]

export const normalizeBaseUrl = (value: string) =>
  Effect.gen(function*() {
    const trimmed = value.trim().replace(/\/+$/, "")
    if (!URL.canParse(trimmed) || !/^https?:$/.test(new URL(trimmed).protocol)) {
      return yield* new InvalidOptions({
        message: `--base-url must be an http(s) URL such as https://pets.example.com/v1, not "${value}"`
      })
    }
    return trimmed
  })

const invariantChecks = (tally: ReturnType<typeof makeObservations>["tally"]): ReadonlyArray<Check> => {
  const fromTally = (id: string) =>
    Effect.gen(function*() {
      const { checked, broken, first } = tally(id)
      if (checked === 0) return yield* skipped("no response of the run to look at")
      if (first !== undefined) {
        return yield* new CheckFailed({ ...first, received: `${first.received} (${broken} of ${checked} responses)` })
      }
    })
  return [
    {
      id: "headers.present",
      area: "headers",
      tag: "spec",
      title: "X-RateLimit-Limit, -Remaining and -Reset on every response",
      run: fromTally("headers.present")
    },
    {
      id: "errors.shape",
      area: "errors",
      tag: "spec",
      title: "every error answer has an Error body whose status is the HTTP status",
      run: fromTally("errors.shape")
    },
    {
      id: "media.json",
      area: "media",
      tag: "spec",
      title: "every body the operations answer is application/json",
      run: fromTally("media.json")
    },
    {
      id: "headers.no-store",
      area: "headers",
      tag: "extension",
      title: "Cache-Control: no-store, X-Content-Type-Options: nosniff and X-Request-Id on every response",
      run: fromTally("headers.no-store")
    },
    {
      id: "errors.exact",
      area: "errors",
      tag: "extension",
      title: "every error body is exactly {code, message, status} (details on a 400), with the README's code",
      run: fromTally("errors.exact")
    },
    {
      id: "errors.request-id",
      area: "errors",
      tag: "extension",
      title: "every error body carries requestId, the answer's X-Request-Id",
      run: fromTally("errors.request-id")
    }
  ]
}

/** Every phase of a run, its checks in catalogue order. */
const phasesOf = (
  run: RunContext,
  checks: { readonly fuzz: ReadonlyArray<Check>; readonly invariants: ReadonlyArray<Check> },
  document: Parameters<typeof webhooksPhase>[2] = {},
  webhooks?: WebhookOptions,
  admin?: ReturnType<typeof makeAdmin>
) =>
  Effect.gen(function*() {
    const general = yield* generalPhase(run)
    // The schema-driven phase sends with the general key, after the general checks, so that they count its requests
    // alone; the value classes come last, within what the key's window has left.
    const phases: Array<Phase> = [
      {
        ...general,
        checks: [...general.checks, ...yield* specChecks(run), ...checks.fuzz, ...yield* valueChecks(run)]
      },
      ...yield* Effect.forEach(PLANS, (plan) => planPhase(run, plan))
    ]
    phases.push(yield* storePhase(run))
    phases.push(yield* eventsPhase(run, document.paths))
    const receiving = yield* webhooksPhase(run, webhooks, document)
    phases.push(receiving.phase)
    phases.push(yield* corsPhase(run))
    const keyLife = keyLifePhase(run, admin)
    phases.push(keyLife.phase)
    phases.push({ name: "invariants", after: phases.map((phase) => phase.name), checks: checks.invariants })
    return { phases, release: Effect.andThen(receiving.release, keyLife.release) }
  })

/** Every check of the suite (a plan's checks once per plan), as `--only` and `--grep` choose from them; nothing is sent. */
export const catalogue: Effect.Effect<ReadonlyArray<Pick<Check, "id" | "area" | "tag" | "title">>> = Effect.gen(
  function*() {
    const run: RunContext = {
      baseUrl: "http://catalogue.invalid/v1",
      runId: "catalogue",
      keys: { free: [], pro: [], business: [], enterprise: [] },
      generalKey: undefined,
      staffKey: undefined,
      daily: false,
      maxWaitSeconds: 0,
      progress: () => {},
      petName: () => "catalogue"
    }
    const fuzz = yield* fuzzChecks(run, { requests: 0, seed: 0 })
    const noDocument = {
      url: undefined,
      observe: () => {},
      tally: () => ({ checked: 0, broken: 0 }),
      check: Effect.void
    }
    const { phases } = yield* phasesOf(run, {
      fuzz: fuzz.checks,
      invariants: [...invariantChecks(makeObservations().tally), documentCheck(noDocument)]
    })
    return phases.flatMap((phase) => phase.checks.map(({ area, id, tag, title }) => ({ id, area, tag, title })))
  }
)

/** Why a run stopped before its end. */
type Stop = { readonly _tag: "Deadline"; readonly seconds: number } | {
  readonly _tag: "Signal"
  readonly reason: string
}

export const suite = (options: SuiteOptions) =>
  Effect.gen(function*() {
    const baseUrl = yield* normalizeBaseUrl(options.baseUrl)
    const maxWaitSeconds = options.maxWaitSeconds ?? 120
    const requestTimeoutSeconds = options.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS
    const maxDurationSeconds = options.maxDurationSeconds ??
      (options.daily === true ? DEFAULT_MAX_DURATION_DAILY_SECONDS : DEFAULT_MAX_DURATION_SECONDS)
    const onProgress = options.onProgress ?? (() => {})
    const runId = randomBytes(4).toString("hex")
    const startedAt = new Date()
    const selected = isSelected({ only: options.only, grep: options.grep })
    const adminUrl = options.admin === undefined ? undefined : normalizeAdminUrl(options.admin.url)
    if (options.admin !== undefined && adminUrl === undefined) {
      return yield* new InvalidOptions({
        message: `--admin-url must be an http(s) URL such as http://127.0.0.1:8081, not "${options.admin.url}"`
      })
    }
    if (options.admin !== undefined && options.admin.token.trim() === "") {
      return yield* new InvalidOptions({ message: "the admin token given is empty" })
    }
    const adminSettings = options.admin === undefined || adminUrl === undefined ? undefined : {
      url: adminUrl,
      token: options.admin.token.trim(),
      requestTimeoutSeconds: options.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS
    }

    const keysOf = (plan: Plan) =>
      (options.keys?.[plan] ?? []).map((secret, index): ApiKey => ({ plan, secret, label: `${plan} key ${index + 1}` }))
    const keys: Record<Plan, ReadonlyArray<ApiKey>> = {
      free: keysOf("free"),
      pro: keysOf("pro"),
      business: keysOf("business"),
      enterprise: keysOf("enterprise")
    }
    const generalKey = GENERAL_KEY_PREFERENCE.map((plan) => keys[plan][0]).find((key) => key !== undefined)
    const staffKey: ApiKey | undefined = options.staffKey === undefined
      ? undefined
      : { plan: "staff", secret: options.staffKey, label: "staff key" }
    const allKeys = [...PLANS.flatMap((plan) => keys[plan]), ...(staffKey === undefined ? [] : [staffKey])]
    if (allKeys.length === 0) {
      return yield* new InvalidOptions({
        message:
          "no API key given: give at least one (keys: { free: [KEY] }); without a key nothing behind authentication can be checked"
      })
    }
    for (const [index, key] of allKeys.entries()) {
      const first = allKeys.findIndex((other) => other.secret === key.secret)
      if (first < index) {
        return yield* new InvalidOptions({
          message:
            `${key.label} (${lastFour(key.secret)}) is the same key as ${allKeys[first]!.label}: give each key once, ` +
            "since the suite spends each key's windows on its own"
        })
      }
    }
    // Whatever the service answers may echo a key: only its last four characters leave the suite.
    // And so may a webhook endpoint's signing secret, which the webhooks checks hide once they have it.
    const hidden: Array<string> = []
    let scrubKeys = scrubber(allKeys.map((key) => key.secret))
    const hideSecret = (secret: string) => {
      hidden.push(secret)
      scrubKeys = scrubber([...allKeys.map((key) => key.secret), ...hidden])
    }
    // The admin token is not shown at all, not even its last four characters.
    const adminToken = adminSettings?.token
    const scrub = (text: string) =>
      adminToken === undefined ? scrubKeys(text) : scrubKeys(text.replaceAll(adminToken, "<admin token>"))
    const scrubResult = (result: CheckResult): CheckResult => ({
      ...result,
      ...(result.reason === undefined ? {} : { reason: scrub(result.reason) }),
      ...(result.failure === undefined ? {} : {
        failure: {
          ...(result.failure.request === undefined ? {} : { request: scrub(result.failure.request) }),
          expected: scrub(result.failure.expected),
          received: scrub(result.failure.received)
        }
      })
    })
    const progress = (line: string) => onProgress(scrub(line))
    const report = (result: CheckResult) => options.onResult?.(scrubResult(result))

    // What the run has checked so far, kept as it goes: a run stopped early still reports it.
    const ledger = makeLedger()
    let phases: ReadonlyArray<Phase> | undefined
    let fuzzStats: () => SuiteResult["fuzz"] = () => undefined
    let document: LoadedDocument | undefined

    const finish = (incomplete?: SuiteResult["incomplete"]) => {
      const results = phases === undefined ? [...ledger.results.values()] : inCatalogueOrder(phases, ledger.results)
      const stats = fuzzStats()
      return {
        runId,
        baseUrl,
        startedAt: startedAt.toISOString(),
        durationMs: Date.now() - startedAt.getTime(),
        results: results.map(scrubResult),
        summary: summarize(results),
        complete: incomplete === undefined,
        ...(incomplete === undefined ? {} : { incomplete }),
        ...(stats === undefined ? {} : { fuzz: stats }),
        ...(document?.url === undefined ? {} : {
          openapi: { url: document.url, checked: document.tally().checked, broken: document.tally().broken }
        })
      } satisfies SuiteResult
    }

    /** Selected checks that have no result: of the run's phases, or of the catalogue when they were not built yet. */
    const notRun = Effect.gen(function*() {
      const all = phases === undefined ? yield* catalogue : phases.flatMap((phase) => phase.checks)
      return all.filter((check) => selected(check) && !ledger.results.has(check.id)).length
    })

    /** A service that gives no HTTP answer before any check: one failure naming the cause, and nothing else runs. */
    const answersNothing = (request: string, cause: string) =>
      Effect.gen(function*() {
        const result: CheckResult = {
          id: "service.answers",
          title: "the service answers HTTP at the base URL",
          tag: "spec",
          area: "service",
          status: "fail",
          failure: { request, expected: "an HTTP answer", received: cause },
          durationMs: Date.now() - startedAt.getTime()
        }
        ledger.results.set(result.id, result)
        report(result)
        return finish({ reason: "the service gave no HTTP answer, so no check could run", notRun: yield* notRun })
      })

    const run = Effect.gen(function*() {
      const observations = makeObservations()
      const reachable = yield* Effect.result(probe({ baseUrl, requestTimeoutSeconds }, anonymous))
      if (reachable._tag === "Failure") {
        // Nothing listening, or no such host, is a wrong URL; something that listens and gives no answer is a finding.
        if (reachable.failure.nothingThere) {
          return yield* new Unreachable({ baseUrl, cause: reachable.failure.message })
        }
        return yield* answersNothing(`GET ${baseUrl}/pets?limit=1 (no Authorization header)`, reachable.failure.message)
      }
      // A 404 for the list of pets at a base URL without the version segment is a mistyped URL, not a finding.
      if (reachable.success.status === 404 && !/\/v1$/.test(baseUrl)) {
        return yield* new InvalidOptions({
          message: `GET ${baseUrl}/pets answered 404: the base URL must include the version segment, e.g. ${baseUrl}/v1`
        })
      }
      observations.observe(reachable.success)
      const loaded = yield* loadDocument(baseUrl, options.openapi)
      document = loaded

      let pets = 0
      const context: RunContext = {
        baseUrl,
        runId,
        keys,
        generalKey,
        staffKey,
        daily: options.daily ?? false,
        maxWaitSeconds,
        progress,
        petName: () => `conformance-${runId}-${++pets}`,
        hideSecret,
        corsOrigin: options.corsOrigin
      }
      const http = yield* makeHttp({
        baseUrl,
        maxWaitSeconds,
        requestTimeoutSeconds,
        observe: (exchange) => {
          observations.observe(exchange)
          loaded.observe(exchange)
        },
        progress
      })

      // Every key is tried once before any check, so that a mistyped or revoked key stops the run at once.
      const tried = yield* Effect.forEach(
        allKeys,
        (key) =>
          http.send({ path: "/pets?limit=1", credential: withKey(key), retryWhenLimited: false }).pipe(
            Effect.map((exchange) =>
              exchange.status === 401 || exchange.status === 403
                ? {
                  refused: { plan: key.plan, label: key.label, lastFour: lastFour(key.secret), status: exchange.status }
                }
                : {}
            ),
            Effect.catchTag("CheckFailed", (failed) => Effect.succeed({ unanswered: failed }))
          ),
        { concurrency: "unbounded" }
      )
      const unanswered = tried.find((outcome) => "unanswered" in outcome)
      if (unanswered !== undefined && "unanswered" in unanswered) {
        return yield* answersNothing(unanswered.unanswered.request ?? "", unanswered.unanswered.received)
      }
      const refused = tried.flatMap((outcome) => "refused" in outcome ? [outcome.refused] : [])
      if (refused.length > 0) return yield* new InvalidKeys({ refused })
      // Likewise a wrong admin address or token.
      if (adminSettings !== undefined) {
        yield* probeAdmin(adminSettings).pipe(
          Effect.mapError((error) => new InvalidOptions({ message: scrub(error.message) }))
        )
      }

      const seed = options.seed ?? randomBytes(4).readUInt32BE() >>> 1
      const fuzz = yield* fuzzChecks(context, { requests: options.fuzz ?? DEFAULT_FUZZ_REQUESTS, seed })
      fuzzStats = fuzz.stats
      const built = yield* phasesOf(
        context,
        { fuzz: fuzz.checks, invariants: [...invariantChecks(observations.tally), documentCheck(loaded)] },
        loaded,
        options.webhooks,
        adminSettings === undefined ? undefined : makeAdmin(adminSettings)
      )
      phases = built.phases

      yield* runPhases(
        built.phases,
        selected,
        report,
        {
          seconds: options.checkTimeoutSeconds ?? DEFAULT_CHECK_TIMEOUT_SECONDS,
          requests: options.maxRequestsPerCheck ?? DEFAULT_MAX_REQUESTS_PER_CHECK
        },
        ledger
      ).pipe(Effect.ensuring(built.release), Effect.provideService(Http, http))
      return finish()
    })

    const deadline: Effect.Effect<Stop> = Effect.as(Effect.sleep(maxDurationSeconds * 1000), {
      _tag: "Deadline",
      seconds: maxDurationSeconds
    })
    const stopped = options.stop === undefined
      ? deadline
      : Effect.raceFirst(deadline, Effect.map(options.stop, (reason): Stop => ({ _tag: "Signal", reason })))
    const outcome = yield* Effect.raceFirst(
      Effect.map(run, (result) => ({ _tag: "Done" as const, result })),
      stopped
    )
    if (outcome._tag === "Done") return outcome.result

    // Stopped: the checks that were running are interrupted (their requests cancelled); the deadline fails them.
    if (outcome._tag === "Deadline") {
      for (const { check, startedAt: checkStarted } of ledger.running.values()) {
        const result: CheckResult = {
          id: check.id,
          title: check.title,
          tag: check.tag,
          area: check.area,
          status: "fail",
          failure: {
            expected: `the run to end within --max-duration (${formatSeconds(outcome.seconds)})`,
            received: "this check was still running when that time ran out: the service was too slow, or kept it " +
              "waiting (a longer --max-duration gives it more time)"
          },
          durationMs: Date.now() - checkStarted
        }
        ledger.results.set(check.id, result)
        report(result)
      }
    }
    const reason = outcome._tag === "Deadline"
      ? `--max-duration (${formatSeconds(outcome.seconds)}) ran out`
      : outcome.reason
    return finish({ reason, notRun: yield* notRun })
  })

/**
 * Runs the conformance suite against `options.baseUrl`. Resolves with every
 * selected check's result (an incomplete run, stopped by `maxDurationSeconds`,
 * `stop` or a service that gives no answer, with what it checked); rejects with
 * `Unreachable` when nothing listens at the base URL, with `InvalidOptions` for options it cannot use (no key, a
 * key given twice) and with `InvalidKeys` when the service refuses a key.
 */
export const runSuite = async (options: SuiteOptions): Promise<SuiteResult> => {
  const exit = await Effect.runPromiseExit(suite(options))
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}
