import { DecimalId, ListOrdersQuery, ListPetsQuery, NewOrder, NewPet, PetPatch, PetStatus } from "@petstore/contract"
import { Effect, Schema } from "effect"
import { type Check, skipped } from "./checks.ts"
import { keyHint, type RunContext } from "./context.ts"
import { decodeBody, ensure, expectError, expectStatus } from "./expect.ts"
import { type Credential, describeResponse, type Exchange, Http, withKey } from "./http.ts"
import type { CheckFailed, CheckSkipped } from "./model.ts"
import { SpecGetPetPath, SpecListPetsQuery, SpecNewPet, SpecPet, SpecPets } from "./specSchemas.ts"
import { bodyText, deriveClasses, type DeriveOptions, type Fields, queryText, type ValueClass } from "./valueClasses.ts"

/**
 * One check for every class of invalid value of every field and parameter (`valueClasses.ts`): the spec's
 * (`values.*`, from the suite's spec schemas, held to the answers the spec allows) and the contract's
 * (`contract.*`, extensions: this implementation's bounds, spellings, closed bodies and the beta operations'
 * inputs, each 400). A class's requests go out at once; the checks run one after the other in the general phase.
 */

/** A stand-in for a valid value that is only known when the run has it: a fresh pet name, an id the run created. */
const NAME = "conformance"
const ID = "7"

type Verdict = "refused" | "refused-or-exact" | "refused-or-a-page" | "not-found-or-refused"

export interface Target {
  /** The operation, as the spec or the contract names it: the second part of its checks' ids. */
  readonly operation: string
  /** Its path under the base URL, as a pattern: which requests are this operation's. */
  readonly route: RegExp
  readonly tag: "spec" | "extension"
  readonly method: string
  /** The request's path for the classes' fields; the path parameter's value when the location is `path`. */
  readonly path: (fields: Fields, id: number) => string
  readonly schema: Schema.Top
  readonly options: DeriveOptions
  /** The base is known only once the run has created a pet: its id goes where `ID` stands. */
  readonly needsPet?: true
  readonly verdict: (klass: ValueClass) => Verdict
}

const bodyPath = (path: string) => () => path

const TARGETS: ReadonlyArray<Target> = [
  {
    operation: "createPet",
    route: /^\/pets$/,
    tag: "spec",
    method: "POST",
    path: bodyPath("/pets"),
    schema: SpecNewPet,
    options: { location: "body", base: { name: JSON.stringify(NAME), categoryId: ID, status: "\"available\"" } },
    verdict: (klass) => klass.standing === "int64-inexact" ? "refused-or-exact" : "refused"
  },
  {
    operation: "listPets",
    route: /^\/pets$/,
    tag: "spec",
    method: "GET",
    path: (fields) => `/pets?${queryText(fields)}`,
    schema: SpecListPetsQuery,
    options: { location: "query", base: { limit: "5", status: "available" } },
    // §7: the answer to an out-of-range limit or an invalid status is left open beyond the documented bounds.
    verdict: () => "refused-or-a-page"
  },
  {
    operation: "getPet",
    route: /^\/pets\/[^/]+$/,
    tag: "spec",
    method: "GET",
    path: (fields) => `/pets/${encodeURIComponent(fields[0]![1])}`,
    schema: SpecGetPetPath,
    options: { location: "path", base: { petId: ID } },
    needsPet: true,
    // No pet has an id that is not an int64 spelled as one: 404, or 400 for the invalid value; never a pet.
    verdict: () => "not-found-or-refused"
  },
  {
    operation: "createPet",
    route: /^\/pets$/,
    tag: "extension",
    method: "POST",
    path: bodyPath("/pets"),
    schema: NewPet,
    options: {
      location: "body",
      base: { name: JSON.stringify(NAME), categoryId: ID, status: "\"available\"" },
      closed: true,
      otherSide: Schema.toType(NewPet)
    },
    verdict: () => "refused"
  },
  {
    operation: "listPets",
    route: /^\/pets$/,
    tag: "extension",
    method: "GET",
    path: (fields) => `/pets?${queryText(fields)}`,
    schema: Schema.toType(ListPetsQuery),
    options: { location: "query", base: { limit: "5", status: "available" }, otherSide: ListPetsQuery },
    verdict: () => "refused"
  },
  {
    operation: "getPet",
    route: /^\/pets\/[^/]+$/,
    tag: "extension",
    method: "GET",
    path: (fields) => `/pets/${encodeURIComponent(fields[0]![1])}`,
    schema: Schema.toType(Schema.Struct({ petId: DecimalId })),
    options: { location: "path", base: { petId: ID }, otherSide: Schema.Struct({ petId: DecimalId }) },
    needsPet: true,
    verdict: () => "refused"
  },
  {
    operation: "updatePet",
    route: /^\/pets\/[^/]+$/,
    tag: "extension",
    method: "PATCH",
    path: (_fields, id) => `/pets/${id}`,
    schema: PetPatch,
    options: {
      location: "body",
      base: { name: JSON.stringify(NAME), categoryId: ID },
      closed: true,
      otherSide: Schema.toType(PetPatch)
    },
    needsPet: true,
    verdict: () => "refused"
  },
  {
    operation: "placeOrder",
    route: /^\/store\/orders$/,
    tag: "extension",
    method: "POST",
    path: bodyPath("/store/orders"),
    schema: NewOrder,
    options: { location: "body", base: { petId: ID }, closed: true },
    needsPet: true,
    verdict: () => "refused"
  },
  {
    operation: "listOrders",
    route: /^\/store\/orders$/,
    tag: "extension",
    method: "GET",
    path: (fields) => `/store/orders?${queryText(fields)}`,
    schema: Schema.toType(ListOrdersQuery),
    options: { location: "query", base: { limit: "5", status: "placed" }, otherSide: ListOrdersQuery },
    verdict: () => "refused"
  },
  {
    operation: "getOrder",
    route: /^\/store\/orders\/[^/]+$/,
    tag: "extension",
    method: "GET",
    path: (fields) => `/store/orders/${encodeURIComponent(fields[0]![1])}`,
    schema: Schema.toType(Schema.Struct({ orderId: DecimalId })),
    options: { location: "path", base: { orderId: ID }, otherSide: Schema.Struct({ orderId: DecimalId }) },
    verdict: () => "refused"
  }
]

const classKey = (klass: ValueClass) => `${klass.field}.${klass.name}`

/** A target's classes with the base's stand-in id replaced by `id`. */
export const classesOf = (target: Target, id?: number) => {
  const base = id === undefined
    ? target.options.base
    : Object.fromEntries(
      Object.entries(target.options.base).map(([field, value]) => [field, value === ID ? String(id) : value])
    )
  return deriveClasses(target.schema, { ...target.options, base })
}

/**
 * The value classes as the catalogue lists them: the spec's, and the contract's that the spec's do not already
 * hold to the same answer (the spec's createPet classes are refused with 400, as the contract's are).
 */
export const valueClassCatalogue = (): ReadonlyArray<
  { readonly target: Target; readonly klass: ValueClass; readonly id: string }
> => {
  const specStrict = new Set(
    TARGETS.filter((target) => target.tag === "spec").flatMap((target) =>
      classesOf(target).filter((klass) => target.verdict(klass) === "refused").map((klass) =>
        `${target.operation}.${classKey(klass)}`
      )
    )
  )
  return TARGETS.flatMap((target) =>
    classesOf(target)
      .filter((klass) => target.tag === "spec" || !specStrict.has(`${target.operation}.${classKey(klass)}`))
      .map((klass) => ({
        target,
        klass,
        id: `${target.tag === "spec" ? "values" : "contract"}.${target.operation}.${classKey(klass)}`
      }))
  )
}

export { ID as BASE_ID, NAME as BASE_NAME }
export type { Verdict }

const TITLES: Record<Verdict, (operation: string, description: string) => string> = {
  refused: (operation, description) => `${operation}: 400 when ${description}`,
  "refused-or-exact": (operation, description) => `${operation}: when ${description}, 400 or the value stored exactly`,
  "refused-or-a-page": (operation, description) => `${operation}: when ${description}, 400 or a page within the bounds`,
  "not-found-or-refused": (operation, description) => `${operation}: when ${description}, 404 or 400, never a pet`
}

const MAX_PAGE = 100

/** Requests of the key's window the value classes leave to whatever uses the key next (a plan's burst counts from what is left). */
const SPARE = 10

export const valueChecks = (run: RunContext): Effect.Effect<ReadonlyArray<Check>> =>
  Effect.gen(function*() {
    const key = run.generalKey
    const keyed: Effect.Effect<Credential, CheckSkipped> = key === undefined
      ? Effect.fail(skipped(`no API key given: ${keyHint("business")} (any plan will do)`))
      : Effect.succeed(withKey(key))

    /** A pet of the run's own, for the classes whose base is an id: nothing else is ever changed or ordered. */
    const aPet = yield* Effect.cached(Effect.gen(function*() {
      const credential = yield* keyed
      const exchange = yield* Http.use((http) =>
        http.send({ method: "POST", path: "/pets", credential, json: { name: run.petName(), categoryId: 7 } })
      )
      yield* expectStatus(exchange, 201)
      return yield* decodeBody(SpecPet, exchange, "a Pet")
    }))

    /** More than a page of the spec's largest size, so that a page of more than 100 pets could be answered. */
    const moreThanAPage = yield* Effect.cached(Effect.gen(function*() {
      const credential = yield* keyed
      const listed = yield* Http.use((http) => http.send({ path: `/pets?limit=${MAX_PAGE}`, credential }))
      const count = Array.isArray(listed.json) ? listed.json.length : 0
      const missing = count >= MAX_PAGE ? 1 : MAX_PAGE + 1 - count
      yield* Effect.forEach(
        Array.from({ length: missing }),
        () =>
          Http.use((http) =>
            http.send({ method: "POST", path: "/pets", credential, json: { name: run.petName(), categoryId: 11 } })
          ),
        { concurrency: 4, discard: true }
      )
    }))

    /**
     * Set once the key's window has too few requests left for a class (or a 429 outlasted its Retry-After):
     * the classes from there on are skipped, saying so, rather than spend what the plan checks and the
     * store checks need of the key, or wait out windows (a server may keep one closed longer than its
     * Retry-After says). A 429 says nothing of the value sent.
     */
    let limited: CheckSkipped | undefined
    /** What the key's window has left, as the last answer said. */
    let remaining: number | undefined
    const note = (exchanges: ReadonlyArray<Exchange>) => {
      for (const exchange of exchanges) {
        const left = Number(exchange.headers.get("x-ratelimit-remaining"))
        if (Number.isInteger(left)) remaining = remaining === undefined ? left : Math.min(remaining, left)
      }
    }
    const roomFor = (count: number) =>
      Effect.gen(function*() {
        if (remaining === undefined) {
          note([
            yield* Effect.flatMap(
              keyed,
              (credential) => Http.use((http) => http.send({ path: "/pets?limit=1", credential }))
            )
          ])
        }
        if (remaining !== undefined && remaining < count + SPARE) {
          limited = skipped(
            `${key?.label} has ${remaining} requests left in its window, too few for this class's ${count}: ` +
              "this class and those after it were not sent (give a key with more room, such as business)"
          )
          return yield* limited
        }
      })

    /**
     * The answers to the query and path classes, by request: the spec's and the contract's classes of listPets
     * and getPet send the same requests, so each is sent once and judged by both checks.
     */
    const answered = new Map<string, Exchange>()

    const send = (target: Target, fields: Fields, id: number) =>
      Effect.gen(function*() {
        const credential = yield* keyed
        const location = target.options.location
        if (location !== "body") {
          const request = `${target.method} ${target.path(fields, id)}`
          const earlier = answered.get(request)
          if (earlier !== undefined) return earlier
          const exchange = yield* Http.use((http) =>
            http.send({ method: target.method, path: target.path(fields, id), credential })
          )
          if (exchange.status !== 429) answered.set(request, exchange)
          return exchange
        }
        // Each created pet (should the server take the value) gets a name of its own.
        const named = fields.map(([name, value]) =>
          [
            name,
            value.startsWith(JSON.stringify(NAME).slice(0, -1))
              ? JSON.stringify(run.petName() + JSON.parse(value).slice(NAME.length))
              : value
          ] as const
        )
        return yield* Http.use((http) =>
          http.send({
            method: target.method,
            path: target.path(named, id),
            credential,
            body: bodyText(named),
            headers: { "content-type": "application/json" }
          })
        )
      })

    const judge = (
      verdict: Verdict,
      exchange: Exchange,
      sent: string,
      fields: Fields
    ): Effect.Effect<void, CheckFailed> =>
      Effect.gen(function*() {
        switch (verdict) {
          case "refused":
            return yield* expectError(exchange, 400)
          case "refused-or-exact": {
            if (exchange.status === 400) return yield* expectError(exchange, 400)
            const [field, value] = fields.find(([, text]) => /^-?\d{16,}$/.test(text))!
            const expected =
              `400 with an Error body, or 201 with ${field} ${value} exactly: it is an int64 (spec §2), ` +
              "which a JavaScript number would round"
            yield* ensure(exchange.status === 201, exchange, expected)
            const exact = new RegExp(`"${field}"\\s*:\\s*${value}(?![\\d.eE])`).test(exchange.text)
            yield* ensure(exact, exchange, expected, `${describeResponse(exchange)}`)
            return
          }
          case "refused-or-a-page": {
            if (exchange.status === 400) return yield* expectError(exchange, 400)
            const query = new URLSearchParams(exchange.url.split("?")[1] ?? "")
            const limitText = query.get("limit") ?? ""
            const status = query.get("status") ?? ""
            const limit = /^([1-9]\d?|100)$/.test(limitText) ? Number(limitText) : MAX_PAGE
            const filter = (PetStatus.literals as ReadonlyArray<string>).includes(status) ? status : undefined
            const expected = `for ${sent}: 400 with an Error body, or 200 with a JSON array of at most ${limit} Pets` +
              `${filter === undefined ? "" : `, each of status ${filter}`} (more than ${MAX_PAGE} pets exist)`
            yield* ensure(exchange.status === 200, exchange, expected)
            const page = yield* decodeBody(SpecPets, exchange, expected)
            yield* ensure(page.length <= limit, exchange, expected, `${page.length} pets`)
            yield* ensure(filter === undefined || page.every((pet) => pet.status === filter), exchange, expected)
            return
          }
          case "not-found-or-refused":
            yield* ensure(
              exchange.status === 404 || exchange.status === 400,
              exchange,
              `404 (no such pet) or 400 with an Error body: ${sent} is not an int64 spelled as one`
            )
            return yield* expectError(exchange, exchange.status)
        }
      })

    return valueClassCatalogue().map(({ id, klass, target }): Check => {
      const verdict = target.verdict(klass)
      return {
        id,
        area: id.split(".")[0]!,
        tag: target.tag,
        title: TITLES[verdict](target.operation, klass.description),
        run: Effect.gen(function*() {
          if (limited !== undefined) return yield* limited
          if (verdict === "refused-or-a-page") yield* moreThanAPage
          const petId = target.needsPet === true ? (yield* aPet).id : 0
          // Derived again with the run's own pet where the base is an id: the same class, with values around it.
          const requests = target.needsPet === true
            ? classesOf(target, petId).find((other) => classKey(other) === classKey(klass))?.requests ?? klass.requests
            : klass.requests
          yield* roomFor(requests.length)
          const started = Date.now()
          const exchanges = yield* Effect.forEach(requests, (fields) => send(target, fields, petId), {
            concurrency: "unbounded"
          })
          // A window that reset since counts afresh from the answers just received (not those sent before).
          const fresh = exchanges.filter((exchange) => exchange.sentAt >= started)
          if (fresh.length > 0) {
            remaining = undefined
            note(fresh)
          }
          const refused = exchanges.find((exchange) => exchange.status === 429)
          if (refused !== undefined) {
            limited = skipped(
              `${key?.label} was still refused with 429 after waiting Retry-After (${describeResponse(refused)}): ` +
                "this class and those after it were not judged"
            )
            return yield* limited
          }
          for (const [index, exchange] of exchanges.entries()) {
            const fields = requests[index]!
            const sent = target.options.location === "body"
              ? bodyText(fields)
              : fields.map(([name, value]) => `${name}=${JSON.stringify(value)}`).join(", ")
            yield* judge(verdict, exchange, sent, fields)
          }
        })
      }
    })
  })
