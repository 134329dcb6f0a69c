import { Cause, Data, Effect, Exit } from "effect"
import { randomBytes } from "node:crypto"
import { type Check, isSelected, type Phase, runPhases, skipped } from "./checks.ts"
import type { RunContext } from "./context.ts"
import { DEFAULT_FUZZ_REQUESTS, fuzzChecks } from "./fuzz.ts"
import { generalPhase } from "./general.ts"
import { specChecks } from "./specChecks.ts"
import { valueChecks } from "./valueChecks.ts"
import { corsPhase } from "./cors.ts"
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
import { documentCheck, loadDocument } from "./openapiCheck.ts"
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
}

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

const REQUEST_TIMEOUT_SECONDS = 30

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
  webhooks?: WebhookOptions
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
    phases.push({ name: "invariants", after: phases.map((phase) => phase.name), checks: checks.invariants })
    return { phases, release: receiving.release }
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

export const suite = (options: SuiteOptions) =>
  Effect.gen(function*() {
    const baseUrl = yield* normalizeBaseUrl(options.baseUrl)
    const maxWaitSeconds = options.maxWaitSeconds ?? 120
    const onProgress = options.onProgress ?? (() => {})
    const runId = randomBytes(4).toString("hex")
    const startedAt = new Date()

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
    const scrub = (text: string) => scrubKeys(text)
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

    const observations = makeObservations()
    const reachable = yield* Effect.result(
      probe({ baseUrl, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS }, anonymous)
    )
    if (reachable._tag === "Failure") return yield* new Unreachable({ baseUrl, cause: reachable.failure })
    // A 404 for the list of pets at a base URL without the version segment is a mistyped URL, not a finding.
    if (reachable.success.status === 404 && !/\/v1$/.test(baseUrl)) {
      return yield* new InvalidOptions({
        message: `GET ${baseUrl}/pets answered 404: the base URL must include the version segment, e.g. ${baseUrl}/v1`
      })
    }
    observations.observe(reachable.success)
    const document = yield* loadDocument(baseUrl, options.openapi)

    let pets = 0
    const run: RunContext = {
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
      requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS,
      observe: (exchange) => {
        observations.observe(exchange)
        document.observe(exchange)
      },
      progress
    })

    // Every key is tried once before any check, so that a mistyped or revoked key stops the run at once.
    const refused = yield* Effect.forEach(
      allKeys,
      (key) =>
        http.send({ path: "/pets?limit=1", credential: withKey(key), retryWhenLimited: false }).pipe(
          Effect.map((exchange): ReadonlyArray<RefusedKey> =>
            exchange.status === 401 || exchange.status === 403
              ? [{ plan: key.plan, label: key.label, lastFour: lastFour(key.secret), status: exchange.status }]
              : []
          ),
          Effect.catchTag("CheckFailed", (failed) => Effect.fail(new Unreachable({ baseUrl, cause: failed.received })))
        ),
      { concurrency: "unbounded" }
    )
    if (refused.flat().length > 0) return yield* new InvalidKeys({ refused: refused.flat() })

    const seed = options.seed ?? randomBytes(4).readUInt32BE() >>> 1
    const fuzz = yield* fuzzChecks(run, { requests: options.fuzz ?? DEFAULT_FUZZ_REQUESTS, seed })
    const { phases, release } = yield* phasesOf(
      run,
      { fuzz: fuzz.checks, invariants: [...invariantChecks(observations.tally), documentCheck(document)] },
      document,
      options.webhooks
    )

    const results = yield* runPhases(
      phases,
      isSelected({ only: options.only, grep: options.grep }),
      (result) => options.onResult?.(scrubResult(result))
    ).pipe(Effect.ensuring(release), Effect.provideService(Http, http))

    return {
      runId,
      baseUrl,
      startedAt: startedAt.toISOString(),
      durationMs: Date.now() - startedAt.getTime(),
      results: results.map(scrubResult),
      summary: summarize(results),
      ...(fuzz.stats() === undefined ? {} : { fuzz: fuzz.stats()! }),
      ...(document.url === undefined ? {} : {
        openapi: { url: document.url, checked: document.tally().checked, broken: document.tally().broken }
      })
    } satisfies SuiteResult
  })

/**
 * Runs the conformance suite against `options.baseUrl`. Resolves with every
 * selected check's result; rejects with `Unreachable` when the base URL gives
 * no HTTP answer, with `InvalidOptions` for options it cannot use (no key, a
 * key given twice) and with `InvalidKeys` when the service refuses a key.
 */
export const runSuite = async (options: SuiteOptions): Promise<SuiteResult> => {
  const exit = await Effect.runPromiseExit(suite(options))
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}
