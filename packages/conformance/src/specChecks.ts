import { planQuotas } from "@petstore/contract"
import { Effect } from "effect"
import { type Check, skipped } from "./checks.ts"
import { keyHint, type RunContext } from "./context.ts"
import {
  decodeBody,
  ensure,
  ensureEachSpendsOne,
  expectError,
  expectStatus,
  inOneWindow,
  integerHeader
} from "./expect.ts"
import { type Credential, describeResponse, type Exchange, Http, type SendOptions, withKey } from "./http.ts"
import { CheckFailed, type CheckSkipped } from "./model.ts"
import { SpecPet, SpecPets } from "./specSchemas.ts"

/**
 * The spec's statements that the first generation of checks did not read:
 * bounds and types of every input, where the spec leaves the answer open
 * (a `spec` check then accepts every answer the spec allows), the media type
 * of bodies, the reach of the quota, and the version segment. Each is tied to
 * its sentence in the README's coverage table. They run in the general phase,
 * after its checks, with the same key.
 */

/** The spec's maximum page size (§4.1, §8 rule 4). */
const MAX_PAGE = 100

/** 2^63, one more than the largest int64: written out, since a JavaScript number cannot spell it exactly. */
const BEYOND_INT64 = "9223372036854775808"
const BELOW_INT64 = "-9223372036854775809"

const check = (id: string, title: string, run: Check["run"]): Check => ({
  id,
  area: id.split(".")[0]!,
  tag: "spec",
  title,
  run
})

export const specChecks = (run: RunContext): Effect.Effect<ReadonlyArray<Check>> =>
  Effect.gen(function*() {
    const key = run.generalKey
    const keyed: Effect.Effect<Credential, CheckSkipped> = key === undefined
      ? Effect.fail(skipped(`no API key given: ${keyHint("business")} (any plan will do)`))
      : Effect.succeed(withKey(key))

    const send = (options: Omit<SendOptions, "credential">) =>
      Effect.flatMap(keyed, (credential) => Http.use((http) => http.send({ ...options, credential })))
    const get = (path: string) => send({ path })
    /** A createPet request whose body is exactly `body`, sent as application/json. */
    const postRaw = (body: string) =>
      send({ method: "POST", path: "/pets", body, headers: { "content-type": "application/json" } })
    const createPet = (json: unknown) => postRaw(JSON.stringify(json))

    const aPet = yield* Effect.cached(Effect.gen(function*() {
      const exchange = yield* createPet({ name: run.petName(), categoryId: 7 })
      yield* expectStatus(exchange, 201)
      return yield* decodeBody(SpecPet, exchange, "a Pet")
    }))

    /** More than a page of the spec's largest size, so that a page of more than 100 pets could be answered. */
    const moreThanAPage = yield* Effect.cached(Effect.gen(function*() {
      const listed = yield* get(`/pets?limit=${MAX_PAGE}`)
      const count = Array.isArray(listed.json) ? listed.json.length : 0
      const missing = count >= MAX_PAGE ? 1 : MAX_PAGE + 1 - count
      yield* Effect.forEach(Array.from({ length: missing }), () => createPet({ name: run.petName(), categoryId: 11 }), {
        concurrency: 4,
        discard: true
      })
    }))

    /**
     * Where the spec leaves listPets' answer open (§7: out-of-range `limit`,
     * invalid `status`), it allows the one error status it documents for invalid
     * values, 400 with an Error body, or a page that keeps the bounds it states.
     */
    const refusedOrAPage = (exchange: Exchange, sent: string) =>
      Effect.gen(function*() {
        if (exchange.status === 400) return yield* expectError(exchange, 400)
        const expected = `for ${sent}: 400 with an Error body, or 200 with a JSON array of at most ${MAX_PAGE} Pets ` +
          `(the spec's largest page; more than ${MAX_PAGE} pets exist)`
        yield* ensure(exchange.status === 200, exchange, expected)
        const page = yield* decodeBody(SpecPets, exchange, expected)
        yield* ensure(page.length <= MAX_PAGE, exchange, expected, `${page.length} pets`)
      })

    const listAnswersWithin = (queries: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* moreThanAPage
        for (const query of queries) yield* refusedOrAPage(yield* get(`/pets?${query}`), query)
      })

    /** Bodies that are not a NewPet object: createPet must refuse each with 400 and an Error body. */
    const refusesEach = (bodies: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        for (const body of bodies) yield* expectError(yield* postRaw(body), 400)
      })

    return [
      check(
        "versioning.base-path",
        "the base URL ends in the version segment /v1",
        Effect.gen(function*() {
          const path = new URL(run.baseUrl).pathname.replace(/\/+$/, "")
          if (!path.endsWith("/v1")) {
            return yield* new CheckFailed({
              request: `GET ${run.baseUrl}/pets`,
              expected: "the operations under a base address ending in /v1 (spec §1, §9)",
              received: `they answer under ${path || "/"}, without the version segment`
            })
          }
        })
      ),
      check(
        "pets.list-limit-range",
        "listPets: a limit outside 1–100 is 400, or a page of at most 100 pets",
        listAnswersWithin(["limit=101", "limit=200", "limit=1000", "limit=0", "limit=-1"])
      ),
      check(
        "pets.list-limit-type",
        "listPets: a limit that is not an integer is 400, or a page of at most 100 pets",
        listAnswersWithin(["limit=1.5", "limit=abc", "limit=1e3", "limit="])
      ),
      check(
        "pets.list-status-invalid",
        "listPets: a status that is not a PetStatus is 400, or a page of pets",
        listAnswersWithin(["status=adopted", "status=AVAILABLE", "status="])
      ),
      check(
        "pets.id-assigned",
        "createPet: the service assigns the id, whatever id the body carries",
        Effect.gen(function*() {
          const existing = yield* aPet
          const exchange = yield* createPet({ id: existing.id, name: run.petName(), categoryId: 7 })
          if (exchange.status === 400) return yield* expectError(exchange, 400)
          const expected =
            `400 with an Error body, or 201 with an id the service assigned: not ${existing.id}, another pet's`
          yield* ensure(exchange.status === 201, exchange, expected)
          const pet = yield* decodeBody(SpecPet, exchange, expected)
          yield* ensure(pet.id !== existing.id, exchange, expected)
        })
      ),
      check(
        "pets.get-id-invalid",
        "getPet: a petId that is not an int64 is 404 or 400 with an Error body, never a pet",
        Effect.gen(function*() {
          const { id } = yield* aPet
          for (const petId of [`${id}abc`, `${id}.5`, BEYOND_INT64, "abc"]) {
            const exchange = yield* get(`/pets/${petId}`)
            yield* ensure(
              exchange.status === 404 || exchange.status === 400,
              exchange,
              `404 (no such pet) or 400 with an Error body: ${petId} is not an int64`
            )
            yield* expectError(exchange, exchange.status)
          }
        })
      ),
      check(
        "validation.category-range",
        "createPet: 400 when categoryId is beyond the int64 range",
        Effect.suspend(() =>
          refusesEach(
            [BEYOND_INT64, BELOW_INT64].map((id) => `{"name":${JSON.stringify(run.petName())},"categoryId":${id}}`)
          )
        )
      ),
      check("validation.body-missing", "createPet: 400 when the body is empty", refusesEach([""])),
      check(
        "validation.body-not-object",
        "createPet: 400 when the body is JSON but not an object",
        Effect.suspend(() =>
          refusesEach([JSON.stringify([{ name: run.petName(), categoryId: 1 }]), "\"Rex\"", "null", "42"])
        )
      ),
      check(
        "headers.remaining-all-operations",
        "X-RateLimit-Remaining falls by one with every operation's request",
        Effect.gen(function*() {
          const { id } = yield* aPet
          const sample = yield* inOneWindow(Effect.gen(function*() {
            const list = yield* get("/pets?limit=1")
            const create = yield* createPet({ name: run.petName(), categoryId: 7 })
            const fetch = yield* get(`/pets/${id}`)
            return [list, create, fetch, yield* get("/pets?limit=1")]
          }))
          yield* ensureEachSpendsOne(sample, ": every request counts against the quota")
        })
      ),
      check(
        "headers.reset-minute",
        "X-RateLimit-Reset is at most a minute away while the minute's limit is in force",
        Effect.gen(function*() {
          const plan = key?.plan ?? "free"
          if (plan === "enterprise" || plan === "staff") {
            return yield* skipped(`a ${plan} key's windows are its own: give a key of the free, pro or business plan`)
          }
          const perMinute = planQuotas[plan].perMinute
          const exchange = yield* get("/pets?limit=1")
          const limit = integerHeader(exchange, "x-ratelimit-limit")
          if (limit !== perMinute) {
            return yield* skipped(`X-RateLimit-Limit is ${limit}, not the minute's ${perMinute}: another window binds`)
          }
          const reset = integerHeader(exchange, "x-ratelimit-reset")
          const now = exchange.receivedAt / 1000
          yield* ensure(
            reset <= Math.ceil(now) + 61,
            exchange,
            `X-RateLimit-Reset within a minute of now (${Math.floor(now)}): the limit in force is the minute's`,
            describeResponse(exchange)
          )
        })
      )
    ]
  })
