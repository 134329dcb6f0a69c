import { DecimalId, ListPetsQuery, NewPet, PetId, PetstoreApi } from "@petstore/contract"
import { Arbitrary, Effect, Result, Schema, SchemaIssue } from "effect"
import { HttpApi } from "effect/http-api"
import type { Check } from "./checks.ts"
import { skipped } from "./checks.ts"
import type { RunContext } from "./context.ts"
import { toCurl } from "./curl.ts"
import { describeResponse, type Exchange, Http, withKey } from "./http.ts"
import { errorShapeProblem } from "./invariants.ts"
import { type ApiKey, CheckFailed } from "./model.ts"
import { lastFour } from "./secrets.ts"
import { SpecNewPet, SpecPet, SpecPets } from "./specSchemas.ts"

/**
 * The schema-driven phase: requests generated from the contract's own Schemas
 * (Effect's `Arbitrary`), from one seed, so that a run can be replayed. Valid
 * requests must be accepted and answered with what the contract decodes;
 * invalid ones (wrong types, values out of range, missing fields) must be 400
 * with the Error body; methods a known path does not have must not succeed;
 * and nothing may be a 5xx.
 */
export interface FuzzSettings {
  /** How many generated requests; the method probes, one per path and method the API lacks, come on top. */
  readonly requests: number
  readonly seed: number
}

export interface FuzzStats {
  readonly seed: number
  /** Requests the phase sent, method probes included. */
  readonly sent: number
  readonly durationMs: number
}

export const DEFAULT_FUZZ_REQUESTS = 50

/** The operations the spec defines (§4.1–4.3); the API's other operations are this implementation's. */
const SPEC_OPERATIONS = new Set(["listPets", "createPet", "getPet"])

const PROBED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

type Expectation = "valid" | "invalid-spec" | "invalid-contract" | "method-spec" | "method-contract"

interface Probe {
  readonly expectation: Expectation
  readonly exchange: Exchange
  /** Why the answer breaks the expectation; `undefined` when it keeps it. */
  readonly problem: string | undefined
}

/** The API's paths (relative to the base URL, `{param}` for parameters), the methods each has, and whether the spec defines it. */
export const knownPaths = () => {
  const paths = new Map<string, { methods: Set<string>; spec: boolean }>()
  HttpApi.reflect(PetstoreApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const path = endpoint.path.replace(/^\/v1(?=\/)/, "").replace(/:(\w+)/g, "{$1}")
      const entry = paths.get(path) ?? { methods: new Set<string>(), spec: false }
      entry.methods.add(endpoint.method)
      if (SPEC_OPERATIONS.has(endpoint.identifier)) entry.spec = true
      paths.set(path, entry)
    }
  })
  return paths
}

const contractAccepts = (body: unknown) =>
  Result.isSuccess(Schema.decodeUnknownResult(NewPet)(body, { onExcessProperty: "error" }))
const specAccepts = (body: unknown) => Result.isSuccess(Schema.decodeUnknownResult(SpecNewPet)(body))

const formatIssue = SchemaIssue.makeFormatterDefault()
const decodeProblem = (schema: Schema.ConstraintDecoder<unknown>, exchange: Exchange) => {
  const result = Schema.decodeUnknownResult(schema)(exchange.json)
  return Result.isSuccess(result) ? undefined : formatIssue(result.failure.issue).replace(/\s+/g, " ")
}

const ListQuery = Schema.Struct({ limit: ListPetsQuery.fields.limit, status: ListPetsQuery.fields.status })
const listQueryAccepted = (query: Record<string, string>) =>
  Result.isSuccess(Schema.decodeUnknownResult(ListPetsQuery)(query, { onExcessProperty: "error" }))

/** JSON values of every type, to put where the contract expects another. */
const AnyJson = Schema.Union([
  Schema.Finite,
  Schema.String,
  Schema.Boolean,
  Schema.Null,
  Schema.Array(Schema.Int),
  Schema.Record(Schema.String, Schema.String)
])

/**
 * Ways to spoil a valid NewPet, each applied to the fields it fits (`body`: to the whole body): the phase walks
 * through every pair in turn, so that even a small `--fuzz` tries each at least once, with generated values.
 */
const MUTATIONS = [
  { mutation: "drop-field", fits: "any-field" },
  { mutation: "retype-field", fits: "any-field" },
  { mutation: "integer-out-of-range", fits: "number" },
  { mutation: "fraction", fits: "number" },
  { mutation: "any-string", fits: "string" },
  { mutation: "long-string", fits: "string" },
  { mutation: "blank-string", fits: "string" },
  { mutation: "unknown-field", fits: "body" },
  { mutation: "not-an-object", fits: "body" }
] as const
type Mutation = (typeof MUTATIONS)[number]["mutation"]

const pick = <A>(items: ReadonlyArray<A>, index: number) => items[index % items.length]!

/** Every (mutation, field) pair for a body with these fields. */
const mutationPlan = (
  body: Record<string, unknown>
): ReadonlyArray<{ readonly mutation: Mutation; readonly field: string }> =>
  MUTATIONS.flatMap(({ mutation, fits }): ReadonlyArray<{ readonly mutation: Mutation; readonly field: string }> => {
    const fields = Object.keys(body).filter((field) =>
      fits === "any-field" || (fits === "number" && typeof body[field] === "number") ||
      (fits === "string" && typeof body[field] === "string")
    )
    return fits === "body" ? [{ mutation, field: "" }] : fields.map((field) => ({ mutation, field }))
  })

const jsonType = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "array" : typeof value

/** Cuts a name to the contract's 100 UTF-16 code units without splitting a character. */
const fitName = (name: string) => {
  let fitted = ""
  for (const char of name) {
    if (fitted.length + char.length > 100) break
    fitted += char
  }
  return fitted.trimEnd()
}

type Planned =
  | { readonly _tag: "create"; readonly body: unknown }
  | { readonly _tag: "list"; readonly query: Record<string, string> }
  | { readonly _tag: "get"; readonly id: string; readonly known: boolean }

/**
 * Of every 20 requests: 5 valid pets, 7 spoiled ones, 3 lists (half of them out of the
 * contract's bounds), 2 gets of created pets and 3 of generated ids (half not ids at all).
 */
const LAYOUT = [
  "create",
  "spoiled",
  "list",
  "spoiled",
  "get-created",
  "create",
  "spoiled",
  "get-any",
  "create",
  "spoiled",
  "list",
  "get-any",
  "create",
  "spoiled",
  "get-created",
  "spoiled",
  "list",
  "create",
  "spoiled",
  "get-any"
] as const

/** Everything the phase will send, drawn from the seed before the first request. */
const generate = (settings: FuzzSettings, petName: () => string) =>
  Effect.gen(function*() {
    const count = settings.requests
    let seed = settings.seed
    const sample = <A>(arbitrary: Arbitrary.Arbitrary<A>, n = count) =>
      Arbitrary.sampleEffect(arbitrary, { count: Math.max(n, 1), seed: seed++ }).pipe(Effect.orDie)
    const index = Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })))

    // The decoded side allows what the wire refuses (a NUL in a name): keep the pets the contract can send.
    const sendable = Arbitrary.schema(NewPet).pipe(
      Arbitrary.filter((pet) => Result.isSuccess(Schema.encodeResult(NewPet)(pet)))
    )
    const pets = (yield* sample(sendable)).map((pet) => {
      const body: Record<string, unknown> = { ...Schema.encodeSync(NewPet)(pet) }
      body.name = fitName(`${petName()} ${body.name as string}`)
      return body
    })
    const choices = yield* sample(index)
    const anyJson = yield* sample(Arbitrary.schema(AnyJson))
    const nonPositive = yield* sample(Arbitrary.schema(Schema.Int.check(Schema.isLessThanOrEqualTo(0))))
    const beyondSafe = yield* sample(
      Arbitrary.schema(Schema.Finite.check(Schema.isGreaterThan(Number.MAX_SAFE_INTEGER)))
    )
    const fractions = (yield* sample(Arbitrary.schema(Schema.Finite))).map((n) => Number.isInteger(n) ? n + 0.5 : n)
    // A lone surrogate cannot be put in a URL: such strings are left out.
    const strings = [
      ...(yield* sample(Arbitrary.schema(Schema.String))).filter((text) => !/\p{Cs}/u.test(text)),
      "not-a-value"
    ]
    const longStrings = yield* sample(
      Arbitrary.schema(Schema.String.check(Schema.isMinLength(101), Schema.isMaxLength(200))),
      8
    )
    const queries = (yield* sample(Arbitrary.schema(ListQuery))).map((query) => Schema.encodeSync(ListQuery)(query))
    const petIds = yield* sample(Arbitrary.schema(PetId))
    const isDecimalId = Schema.is(Schema.toEncoded(DecimalId))
    const badIds = strings.filter((id) => id !== "" && id !== "." && id !== ".." && !isDecimalId(id))

    /** A generated JSON value of another type than `value`'s. */
    const otherType = (value: unknown, i: number) => {
      for (let offset = 0; offset < anyJson.length; offset++) {
        const candidate = pick(anyJson, i + offset)
        if (jsonType(candidate) !== jsonType(value)) return candidate
      }
      return typeof value === "string" ? 0 : "0"
    }

    const mutate = (body: Record<string, unknown>, mutation: Mutation, field: string, i: number): unknown => {
      const choice = choices[i]!
      switch (mutation) {
        case "drop-field": {
          const { [field]: _dropped, ...rest } = body
          return rest
        }
        case "retype-field":
          return { ...body, [field]: otherType(body[field], i) }
        case "integer-out-of-range":
          return { ...body, [field]: choice % 2 === 0 ? nonPositive[i] : beyondSafe[i] }
        case "fraction":
          return { ...body, [field]: fractions[i] }
        case "any-string":
          return { ...body, [field]: pick(strings, i) }
        case "long-string":
          return { ...body, [field]: pick(longStrings, i) }
        case "blank-string":
          return { ...body, [field]: " ".repeat(1 + choice % 3) }
        case "unknown-field": {
          const name = pick(strings, i) === "" || pick(strings, i) in body ? `x${choice}` : pick(strings, i)
          return { ...body, [name]: anyJson[i] }
        }
        case "not-an-object":
          return jsonType(anyJson[i]) === "object" ? [body] : anyJson[i]
      }
    }

    const planned: Array<Planned> = []
    let spoiled = 0
    for (let i = 0; i < count; i++) {
      const choice = choices[i]!
      switch (LAYOUT[i % LAYOUT.length]!) {
        case "create": {
          // A valid pet, with `status` left out now and then: optional fields are those the contract accepts without.
          const { status: _status, ...withoutStatus } = pets[i]!
          planned.push({
            _tag: "create",
            body: choice % 4 === 0 && contractAccepts(withoutStatus) ? withoutStatus : pets[i]!
          })
          break
        }
        case "spoiled": {
          const { mutation, field } = pick(mutationPlan(pets[i]!), spoiled++)
          planned.push({ _tag: "create", body: mutate(pets[i]!, mutation, field, i) })
          break
        }
        case "list": {
          const query: Record<string, string> = { ...queries[i]! }
          if (choice % 2 === 0) {
            // Out of the contract's bounds: a limit outside 1–100 or any text, a status outside the enumeration.
            if (choice % 4 === 0) query.status = pick(strings, i)
            else {query.limit = choice % 3 === 0
                ? pick(strings, i)
                : String(choice % 8 === 2 ? nonPositive[i] : 101 + choice % 1000)}
          }
          planned.push({ _tag: "list", query })
          break
        }
        case "get-created":
          planned.push({ _tag: "get", id: "", known: true })
          break
        case "get-any": {
          const bad = badIds.length > 0 && choice % 2 === 0
          planned.push({ _tag: "get", id: bad ? pick(badIds, i) : String(petIds[i]), known: false })
          break
        }
      }
    }
    return planned
  })

const judgeInvalid = (exchange: Exchange) => {
  if (exchange.status !== 400) return `status ${exchange.status}: ${describeResponse(exchange)}`
  const problem = errorShapeProblem(exchange)
  return problem === undefined ? undefined : `${problem}: ${describeResponse(exchange)}`
}

const judgeValid = (exchange: Exchange, schema: Schema.ConstraintDecoder<unknown>, status: number) => {
  if (exchange.status !== status) return `status ${exchange.status}: ${describeResponse(exchange)}`
  const problem = decodeProblem(schema, exchange)
  return problem === undefined
    ? undefined
    : `a body that is not the spec's Pet (${problem}): ${describeResponse(exchange)}`
}

/**
 * Why the created pet is not what was sent: its name, categoryId and (when sent) status come back as they
 * went. A name with whitespace at either end is left out: trimming it is this implementation's choice.
 */
const differsFromSent = (sent: Record<string, unknown>, exchange: Exchange) => {
  const pet = exchange.json as SpecPet
  const compared = typeof sent.name === "string" && sent.name !== sent.name.trim()
    ? (["categoryId", "status"] as const)
    : (["name", "categoryId", "status"] as const)
  // Names compare in NFC: the server stores a name normalised (docs/security.md, "What a name may hold").
  const asStored = (value: unknown) => typeof value === "string" ? value.normalize("NFC") : value
  const changed = compared.filter((field) => field in sent && pet[field] !== asStored(sent[field]))
  return changed.length === 0
    ? undefined
    : `${changed.join(" and ")} not as sent (${JSON.stringify(sent)}): ${describeResponse(exchange)}`
}

const EXPECTED: Record<Expectation, string> = {
  valid:
    "every valid request accepted (201 for createPet, 200 for listPets and getPet, or 404 for an id nobody created), " +
    "its body decoded by the contract, a created pet as it was sent and then fetched as it was created",
  "invalid-spec":
    "400 with an Error body for a NewPet the spec refuses (a field missing or of the wrong type, a status outside the enumeration)",
  "invalid-contract":
    "400 with an Error body for a request the contract refuses (values out of its bounds, unknown fields, " +
    "a limit outside 1–100, a status filter outside the enumeration, a petId that is not a positive decimal integer)",
  "method-spec": "no 2xx for a method that the path of a spec operation does not have",
  "method-contract": "no 2xx for a method that a path of the API does not have"
}

/** How many failures a check lists as curl commands; the count says how many there were. */
const LISTED_FAILURES = 10

export const fuzzChecks = (run: RunContext, settings: FuzzSettings) => {
  let stats: FuzzStats | undefined
  const key: ApiKey | undefined = run.generalKey

  const campaign = Effect.gen(function*() {
    if (key === undefined || settings.requests <= 0) return undefined
    const http = yield* Http
    const started = Date.now()
    const planned = yield* generate(settings, run.petName)
    const paths = knownPaths()
    const probes: Array<Probe> = []
    /** The pets this phase created, by id, as the service answered them. */
    const created = new Map<number, SpecPet>()
    const methodProbes = [...paths].flatMap(([path, entry]) =>
      PROBED_METHODS.filter((method) => !entry.methods.has(method)).map((method) => ({
        path,
        method,
        spec: entry.spec
      }))
    )
    const total = planned.length + methodProbes.length
    let sent = 0
    /** The key's window as the last answer described it: the phase waits for the reset rather than provoke a 429. */
    let window: { remaining: number; resetAt: number } | undefined

    const send = (options: { method: string; path: string; json?: unknown }) =>
      Effect.gen(function*() {
        if (window !== undefined && window.remaining <= 0) {
          const millis = window.resetAt - Date.now()
          if (millis > 0 && millis <= run.maxWaitSeconds * 1000) {
            run.progress(`fuzz: ${key.label} has spent its window: waiting ${Math.ceil(millis / 1000)} s for its reset`)
            yield* Effect.sleep(millis + 100)
          }
        }
        const exchange = yield* http.send({
          method: options.method,
          path: options.path,
          credential: withKey(key),
          ...(options.json === undefined ? {} : { json: options.json })
        })
        sent++
        const remaining = Number(exchange.headers.get("x-ratelimit-remaining"))
        const reset = Number(exchange.headers.get("x-ratelimit-reset"))
        window = Number.isInteger(remaining) && Number.isInteger(reset)
          ? { remaining, resetAt: reset * 1000 }
          : undefined
        if (sent % 10 === 0) run.progress(`fuzz: ${sent} of ${total} requests (seed ${settings.seed})`)
        return exchange
      })

    const record = (expectation: Expectation, exchange: Exchange, problem: string | undefined) => {
      // Refused for the quota even after Retry-After: says nothing about the request.
      if (exchange.status === 429) return
      probes.push({ expectation, exchange, problem })
    }

    for (const request of planned) {
      switch (request._tag) {
        case "create": {
          const exchange = yield* send({ method: "POST", path: "/pets", json: request.body })
          const expectation: Expectation = !specAccepts(request.body)
            ? "invalid-spec"
            : !contractAccepts(request.body)
            ? "invalid-contract"
            : "valid"
          const problem = expectation === "valid"
            ? judgeValid(exchange, SpecPet, 201) ?? differsFromSent(request.body as Record<string, unknown>, exchange)
            : judgeInvalid(exchange)
          if (expectation === "valid" && problem === undefined) {
            const pet = exchange.json as SpecPet
            created.set(pet.id, pet)
          }
          record(expectation, exchange, problem)
          break
        }
        case "list": {
          const exchange = yield* send({ method: "GET", path: `/pets?${new URLSearchParams(request.query)}` })
          if (!listQueryAccepted(request.query)) {
            record("invalid-contract", exchange, judgeInvalid(exchange))
            break
          }
          const limit = request.query.limit === undefined ? 20 : Number(request.query.limit)
          const problem = judgeValid(exchange, SpecPets, 200) ??
            ((exchange.json as ReadonlyArray<unknown>).length > limit
              ? `${(exchange.json as ReadonlyArray<unknown>).length} pets for limit ${limit}: ${
                describeResponse(exchange)
              }`
              : undefined)
          record("valid", exchange, problem)
          break
        }
        case "get": {
          const createdIds = [...created.keys()]
          if (request.known && createdIds.length === 0) break
          const id = request.known ? String(pick(createdIds, sent)) : request.id
          const exchange = yield* send({ method: "GET", path: `/pets/${encodeURIComponent(id)}` })
          if (!request.known && !Schema.is(Schema.toEncoded(DecimalId))(id)) {
            record("invalid-contract", exchange, judgeInvalid(exchange))
          } else if (!request.known && exchange.status === 404) {
            const shape = errorShapeProblem(exchange)
            record(
              "valid",
              exchange,
              shape === undefined ? undefined : `404 without an Error body (${shape}): ${describeResponse(exchange)}`
            )
          } else {
            const earlier = created.get(Number(id))
            const problem = judgeValid(exchange, SpecPet, 200) ??
              (earlier !== undefined && JSON.stringify(exchange.json) !== JSON.stringify(earlier)
                ? `not the pet createPet answered (${JSON.stringify(earlier)}): ${describeResponse(exchange)}`
                : undefined)
            record("valid", exchange, problem)
          }
          break
        }
      }
    }

    const someId = String([...created.keys()][0] ?? 1)
    for (const probe of methodProbes) {
      const exchange = yield* send({ method: probe.method, path: probe.path.replace(/\{\w+\}/g, someId) })
      const succeeded = exchange.status >= 200 && exchange.status < 300
      record(
        probe.spec ? "method-spec" : "method-contract",
        exchange,
        succeeded
          ? `${probe.method} ${probe.path} is not an operation of the API, yet: ${describeResponse(exchange)}`
          : undefined
      )
    }

    stats = { seed: settings.seed, sent, durationMs: Date.now() - started }
    return probes
  })

  const failWith = (expected: string, failing: ReadonlyArray<Probe>, judged: number) => {
    const curl = (probe: Probe) => toCurl(probe.exchange)
    const [first, ...others] = failing
    const listed = others.slice(0, LISTED_FAILURES - 1).map((probe) =>
      `\n          ${curl(probe)}\n            → ${probe.problem}`
    )
    return new CheckFailed({
      request: curl(first!),
      expected: `${expected} (seed ${settings.seed}; replay with --seed ${settings.seed}` +
        `${key === undefined ? "" : `, with CONFORMANCE_KEY set to ${key.label} (${lastFour(key.secret)})`})`,
      received: `${first!.problem} (${failing.length} of ${judged} such requests)` + listed.join("") +
        (others.length > LISTED_FAILURES - 1 ? `\n          … and ${others.length - LISTED_FAILURES + 1} more` : "")
    })
  }

  return Effect.gen(function*() {
    const cached = yield* Effect.cached(campaign)
    const judge = (
      select: (probe: Probe) => boolean,
      problemOf: (probe: Probe) => string | undefined,
      expected: string
    ) =>
      Effect.gen(function*() {
        if (key === undefined) return yield* skipped("no key given")
        if (settings.requests <= 0) return yield* skipped("--fuzz 0")
        const probes = (yield* cached) ?? []
        const judged = probes.filter(select)
        if (judged.length === 0) return yield* skipped("the seed drew no request of this kind: raise --fuzz")
        const failing = judged.flatMap((probe) => {
          const problem = problemOf(probe)
          return problem === undefined ? [] : [{ ...probe, problem }]
        })
        if (failing.length > 0) return yield* failWith(expected, failing, judged.length)
      })
    const byExpectation = (expectation: Expectation) =>
      judge((probe) => probe.expectation === expectation, (probe) => probe.problem, EXPECTED[expectation])

    // The campaign runs in whichever check comes first: each may send all of it, the method probes, and the reads
    // of the pets it created; and a second a request on top of the run's per-check bound, for a distant service.
    const bounds = { maxRequests: 2 * settings.requests + 100, extraSeconds: settings.requests }
    const checks: ReadonlyArray<Check> = [
      {
        id: "fuzz.valid",
        area: "fuzz",
        ...bounds,
        tag: "spec",
        title: "generated valid requests are accepted and their answers decode as the spec's Pet",
        run: byExpectation("valid")
      },
      {
        id: "fuzz.invalid",
        area: "fuzz",
        ...bounds,
        tag: "spec",
        title: "generated NewPets the spec refuses are 400 with an Error body",
        run: byExpectation("invalid-spec")
      },
      {
        id: "fuzz.invalid-contract",
        area: "fuzz",
        ...bounds,
        tag: "extension",
        title: "generated requests outside the contract's bounds are 400 with an Error body",
        run: byExpectation("invalid-contract")
      },
      // An extension: §4.4 leaves the other operations on the spec's paths open (Swagger Petstore updates with PUT and POST).
      {
        id: "fuzz.methods",
        area: "fuzz",
        ...bounds,
        tag: "extension",
        title: "methods the spec's paths do not have never succeed",
        run: byExpectation("method-spec")
      },
      {
        id: "fuzz.methods-contract",
        area: "fuzz",
        ...bounds,
        tag: "extension",
        title: "methods the API's other paths do not have never succeed",
        run: byExpectation("method-contract")
      },
      {
        id: "fuzz.no-5xx",
        area: "fuzz",
        ...bounds,
        tag: "spec",
        title: "no generated request is answered with a 5xx",
        run: judge(
          () => true,
          (probe) => probe.exchange.status >= 500 ? `a server error: ${describeResponse(probe.exchange)}` : undefined,
          "no 5xx, whatever the request"
        )
      }
    ]
    return { checks, stats: () => stats }
  })
}
