import { PetStatus } from "@petstore/contract"
import { Effect, Option, Schema } from "effect"
import { type Check, type Phase, skipped } from "./checks.ts"
import { GENERAL_PHASE, keyHint, type RunContext } from "./context.ts"
import {
  decodeBody,
  ensure,
  ensureEachSpendsOne,
  expectError,
  expectStatus,
  failure,
  header,
  inOneWindow,
  integerHeader,
  isSuccess
} from "./expect.ts"
import { anonymous, type Credential, describeResponse, type Exchange, Http, type SendOptions, withKey } from "./http.ts"
import { CheckFailed, type CheckSkipped, type Tag } from "./model.ts"
import { SpecPet as Pet, SpecPets as Pets } from "./specSchemas.ts"

const check = (
  id: string,
  tag: Tag,
  title: string,
  run: Check["run"],
  requires?: ReadonlyArray<string>
): Check => ({ id, area: id.split(".")[0]!, tag, title, run, ...(requires === undefined ? {} : { requires }) })

const STATUSES = PetStatus.literals

/** An id no store is expected to have reached: the largest integer JSON carries exactly. */
const UNKNOWN_PET_ID = 9_007_199_254_740_991

/** RFC 9745 `Deprecation` and RFC 8594 `Sunset` of `GET /pets/{petId}` (spec §9, README). */
const DEPRECATION = "@1795305600"
const SUNSET = Date.UTC(2030, 11, 5)

const decodePet = Schema.decodeUnknownOption(Pet)

const samePet = (a: Pet, b: Pet) =>
  a.id === b.id && a.name === b.name && a.categoryId === b.categoryId && a.status === b.status

const showPet = (pet: Pet) =>
  JSON.stringify({ id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status })

/** The `rel="next"` target of a `Link` header. */
export const nextLink = (exchange: Exchange) => {
  for (const part of (header(exchange, "link") ?? "").split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match !== null && /rel\s*=\s*"?next"?(\s|;|$)/i.test(match[2]!)) return match[1]!
  }
  return undefined
}

const idsOf = (pets: ReadonlyArray<Pet>) => pets.map((pet) => pet.id)

/** The checks that need one key and no quota in particular: every operation, status code and header. */
export const generalPhase = (run: RunContext): Effect.Effect<Phase> =>
  Effect.gen(function*() {
    const key = run.generalKey
    const noKey = skipped(`no API key given: ${keyHint("business")} (any plan will do)`)
    const keyed: Effect.Effect<Credential, CheckSkipped> = key === undefined
      ? Effect.fail(noKey)
      : Effect.succeed(withKey(key))

    /** Every pet this run created, as the service answered it. */
    const created: Array<Pet> = []

    const send = (options: SendOptions) => Http.use((http) => http.send(options))

    const get = (path: string) => Effect.flatMap(keyed, (credential) => send({ path, credential }))

    const createPet = (json: unknown) =>
      Effect.gen(function*() {
        const credential = yield* keyed
        const exchange = yield* send({ method: "POST", path: "/pets", credential, json })
        const pet = decodePet(exchange.json)
        if (isSuccess(exchange) && Option.isSome(pet)) created.push(pet.value)
        return exchange
      })

    const listOf = (exchange: Exchange, what: string) =>
      Effect.andThen(expectStatus(exchange, 200), decodeBody(Pets, exchange, what))

    const firstPet = yield* Effect.cached(createPet({ name: run.petName(), categoryId: 7, status: "pending" }))
    const petWithoutStatus = yield* Effect.cached(createPet({ name: run.petName(), categoryId: 3 }))
    const petOfEachStatus = yield* Effect.cached(
      Effect.forEach(STATUSES, (status) => createPet({ name: run.petName(), categoryId: 5, status }))
    )

    /** The pet the run created first, or a failure that says why there is none. */
    const aCreatedPet = Effect.gen(function*() {
      const exchange = yield* firstPet
      return yield* Option.match(decodePet(exchange.json), {
        onNone: () => Effect.fail(failure(exchange, "createPet to answer a Pet, so that getPet has one to fetch")),
        onSome: Effect.succeed
      })
    })

    /**
     * More than 100 pets, so that `limit=100` and the default page size are
     * tested against a store with more than a page. Creates only what it must.
     */
    const moreThanAPage = yield* Effect.cached(Effect.gen(function*() {
      const listed = yield* get("/pets?limit=100")
      const count = Array.isArray(listed.json) ? listed.json.length : 0
      const missing = count >= 100 ? 1 : 101 - count
      let done = 0
      yield* Effect.forEach(
        Array.from({ length: missing }),
        () =>
          createPet({ name: run.petName(), categoryId: 11 }).pipe(
            Effect.tap(() =>
              Effect.sync(() => {
                if (++done % 25 === 0) run.progress(`general: created ${done}/${missing} pets`)
              })
            )
          ),
        { concurrency: 4, discard: true }
      )
    }))

    /** Four requests in a row, in one window, to watch X-RateLimit-Remaining. */
    const rateLimitSample = yield* Effect.cached(
      inOneWindow(Effect.forEach(Array.from({ length: 4 }), () => get("/pets?limit=1")))
    )

    const pets: Array<Check> = [
      check(
        "pets.create",
        "spec",
        "createPet: 201 with the created Pet, equal to what was sent",
        Effect.gen(function*() {
          const exchange = yield* firstPet
          yield* expectStatus(exchange, 201)
          const pet = yield* decodeBody(Pet, exchange, "a Pet")
          const sent = JSON.parse(exchange.requestBody!) as { name: string; categoryId: number; status: string }
          yield* ensure(
            pet.name === sent.name && pet.categoryId === sent.categoryId && pet.status === sent.status,
            exchange,
            `a Pet with name ${sent.name}, categoryId ${sent.categoryId} and status ${sent.status}`
          )
        })
      ),
      check(
        "pets.create-status-optional",
        "spec",
        "createPet: status may be left out",
        Effect.gen(function*() {
          const exchange = yield* petWithoutStatus
          yield* expectStatus(exchange, 201)
          yield* decodeBody(Pet, exchange, "a Pet, with one of the PetStatus values")
        })
      ),
      check(
        "pets.get",
        "spec",
        "getPet: a created pet is retrievable, equal to what createPet answered",
        Effect.gen(function*() {
          const pet = yield* aCreatedPet
          const exchange = yield* get(`/pets/${pet.id}`)
          yield* expectStatus(exchange, 200)
          const fetched = yield* decodeBody(Pet, exchange, "a Pet")
          yield* ensure(samePet(pet, fetched), exchange, `the pet createPet answered: ${showPet(pet)}`)
        })
      ),
      check(
        "pets.get-unknown",
        "spec",
        "getPet: an unknown id is 404 with an Error body",
        Effect.gen(function*() {
          yield* expectError(yield* get(`/pets/${UNKNOWN_PET_ID}`), 404)
        })
      ),
      check(
        "pets.list",
        "spec",
        "listPets: 200 with a JSON array of Pets",
        Effect.gen(function*() {
          yield* aCreatedPet
          yield* listOf(yield* get("/pets"), "a JSON array of Pets")
        })
      ),
      check(
        "pets.list-limit-1",
        "spec",
        "listPets: limit=1 returns one pet",
        Effect.gen(function*() {
          yield* aCreatedPet
          yield* petWithoutStatus
          const exchange = yield* get("/pets?limit=1")
          const page = yield* listOf(exchange, "a JSON array of Pets")
          yield* ensure(
            page.length === 1,
            exchange,
            "exactly 1 pet",
            `${page.length} pets: ${describeResponse(exchange)}`
          )
        })
      ),
      check(
        "pets.list-limit-100",
        "spec",
        "listPets: limit=100 returns 100 pets when more exist",
        Effect.gen(function*() {
          yield* moreThanAPage
          const exchange = yield* get("/pets?limit=100")
          const page = yield* listOf(exchange, "a JSON array of Pets")
          yield* ensure(page.length === 100, exchange, "exactly 100 pets (more than 100 exist)", `${page.length} pets`)
        })
      ),
      check(
        "pets.list-default-limit",
        "spec",
        "listPets: 20 pets by default when more exist",
        Effect.gen(function*() {
          yield* moreThanAPage
          const exchange = yield* get("/pets")
          const page = yield* listOf(exchange, "a JSON array of Pets")
          yield* ensure(
            page.length === 20,
            exchange,
            "exactly 20 pets, the default page size (more than 20 exist)",
            `${page.length} pets`
          )
        })
      ),
      check(
        "pets.list-status-filter",
        "spec",
        "listPets: status=… returns only pets of that status",
        Effect.gen(function*() {
          yield* petOfEachStatus
          for (const status of STATUSES) {
            const exchange = yield* get(`/pets?status=${status}&limit=100`)
            const page = yield* listOf(exchange, "a JSON array of Pets")
            yield* ensure(page.length > 0, exchange, `at least the ${status} pet this run created`, "an empty array")
            const other = page.find((pet) => pet.status !== status)
            yield* ensure(
              other === undefined,
              exchange,
              `only ${status} pets`,
              `a ${other?.status} pet among them: ${other && showPet(other)}`
            )
          }
        })
      ),
      check(
        "pets.unique-ids",
        "spec",
        "createPet: every pet gets an id of its own",
        Effect.gen(function*() {
          yield* moreThanAPage
          const exchange = yield* get("/pets?limit=100")
          const seen = new Map<number, Pet>()
          for (const pet of created) {
            const before = seen.get(pet.id)
            if (before !== undefined) {
              return yield* new CheckFailed({
                request: `POST ${run.baseUrl}/pets, ${created.length} times`,
                expected: "a different id for every created pet",
                received: `id ${pet.id} for both ${showPet(before)} and ${showPet(pet)}`
              })
            }
            seen.set(pet.id, pet)
          }
          const page = yield* listOf(exchange, "a JSON array of Pets")
          const ids = idsOf(page)
          const repeated = ids.find((id, index) => ids.indexOf(id) !== index)
          yield* ensure(repeated === undefined, exchange, "each pet once in a page", `id ${repeated} twice`)
        })
      )
    ]

    const invalidBody = (id: string, title: string, body: () => unknown) =>
      check(
        id,
        "spec",
        `createPet: 400 when ${title}`,
        Effect.gen(function*() {
          yield* expectError(yield* createPet(body()), 400)
        })
      )

    const validation: Array<Check> = [
      invalidBody("validation.missing-name", "name is missing", () => ({ categoryId: 1 })),
      invalidBody("validation.missing-category", "categoryId is missing", () => ({ name: run.petName() })),
      invalidBody("validation.name-type", "name is not a string", () => ({ name: 42, categoryId: 1 })),
      invalidBody(
        "validation.category-type",
        "categoryId is a string",
        () => ({ name: run.petName(), categoryId: "7" })
      ),
      invalidBody(
        "validation.category-fraction",
        "categoryId is not a whole number",
        () => ({ name: run.petName(), categoryId: 1.5 })
      ),
      invalidBody("validation.status", "status is not available, pending or sold", () => ({
        name: run.petName(),
        categoryId: 1,
        status: "adopted"
      }))
    ]

    /** The three ways to be refused: no header, a valid key under another scheme, an unknown key. */
    const wrongCredentials: ReadonlyArray<
      { readonly id: string; readonly title: string; readonly credential: () => Credential }
    > = [
      { id: "missing", title: "without an Authorization header", credential: () => anonymous },
      {
        id: "scheme",
        title: "when the key is sent with another scheme (Token)",
        credential: () =>
          key === undefined
            ? {
              _tag: "Raw",
              authorization: "Token psk_conformance_no_such_key",
              description: "Token with an unknown key"
            }
            : withKey(key, "Token")
      },
      {
        id: "unknown",
        title: "with an unknown key",
        credential: () => ({
          _tag: "Raw",
          authorization: `Bearer psk_conformance_unknown_${run.runId}`,
          description: "Bearer with a key the service never issued"
        })
      }
    ]

    const operations: ReadonlyArray<{
      readonly name: string
      readonly request: (credential: Credential) => Effect.Effect<Exchange, CheckFailed | CheckSkipped, Http>
    }> = [
      { name: "listPets", request: (credential) => send({ path: "/pets", credential }) },
      {
        name: "createPet",
        request: (credential) =>
          send({ method: "POST", path: "/pets", credential, json: { name: run.petName(), categoryId: 1 } })
      },
      {
        name: "getPet",
        request: (credential) =>
          Effect.gen(function*() {
            // A pet that exists, so that only the credential can be wrong; without a key, any id.
            const id = key === undefined ? 1 : (yield* aCreatedPet).id
            return yield* send({ path: `/pets/${id}`, credential })
          })
      }
    ]

    const authentication: Array<Check> = operations.flatMap((operation) =>
      wrongCredentials.map((wrong) =>
        check(
          `auth.${operation.name}.${wrong.id}`,
          "spec",
          `${operation.name}: 401 ${wrong.title}`,
          Effect.gen(function*() {
            yield* expectError(yield* operation.request(wrong.credential()), 401)
          })
        )
      )
    )

    const headers: Array<Check> = [
      check(
        "headers.remaining",
        "spec",
        "X-RateLimit-Remaining falls by one with each request",
        Effect.gen(function*() {
          yield* ensureEachSpendsOne(yield* rateLimitSample)
        })
      ),
      check(
        "headers.reset",
        "spec",
        "X-RateLimit-Reset is a Unix time in seconds, not in the past",
        Effect.gen(function*() {
          for (const exchange of yield* rateLimitSample) {
            const reset = integerHeader(exchange, "x-ratelimit-reset")
            const now = exchange.receivedAt / 1000
            const hint = reset > 1e11
              ? " (milliseconds?)"
              : reset < 1e9
              ? " (seconds until the reset rather than a timestamp?)"
              : ""
            yield* ensure(
              reset >= Math.floor(now) - 1 && reset <= now + 86_400 + 1,
              exchange,
              `a Unix timestamp in seconds between now (${Math.floor(now)}) and a day from now`,
              `X-RateLimit-Reset: ${header(exchange, "x-ratelimit-reset")}${hint}`
            )
          }
        })
      )
    ]

    const extension: Array<Check> = [
      check(
        "extension.location",
        "extension",
        "createPet: Location: /v1/pets/{id}",
        Effect.gen(function*() {
          const exchange = yield* firstPet
          const pet = yield* aCreatedPet
          const location = header(exchange, "location") ?? ""
          const path = location.startsWith("/")
            ? location
            : URL.canParse(location)
            ? new URL(location).pathname
            : location
          yield* ensure(
            path === `/v1/pets/${pet.id}`,
            exchange,
            `Location: /v1/pets/${pet.id}`,
            `Location: ${location || "(none)"}`
          )
        })
      ),
      check(
        "extension.status-default",
        "extension",
        "createPet: status defaults to available",
        Effect.gen(function*() {
          const exchange = yield* petWithoutStatus
          const pet = yield* decodeBody(Pet, exchange, "a Pet")
          yield* ensure(pet.status === "available", exchange, "status available", `status ${pet.status}`)
        })
      ),
      check(
        "extension.name-bounds",
        "extension",
        "createPet: name is trimmed, and must then be 1–100 characters",
        Effect.gen(function*() {
          const name = run.petName()
          const trimmed = yield* createPet({ name: `  ${name}  `, categoryId: 1 })
          yield* expectStatus(trimmed, 201)
          const pet = yield* decodeBody(Pet, trimmed, "a Pet")
          yield* ensure(pet.name === name, trimmed, `name ${name}, trimmed`, `name ${JSON.stringify(pet.name)}`)
          const longest = run.petName().padEnd(100, "x")
          yield* expectStatus(yield* createPet({ name: longest, categoryId: 1 }), 201)
          yield* expectError(yield* createPet({ name: `${longest}x`, categoryId: 1 }), 400)
          yield* expectError(yield* createPet({ name: "   ", categoryId: 1 }), 400)
        })
      ),
      check(
        "extension.category-bounds",
        "extension",
        "createPet: categoryId must be from 1 to 2^53 − 1",
        Effect.gen(function*() {
          yield* expectStatus(yield* createPet({ name: run.petName(), categoryId: Number.MAX_SAFE_INTEGER }), 201)
          yield* expectError(yield* createPet({ name: run.petName(), categoryId: 0 }), 400)
          // 2^53 + 1 cannot be told from 2^53 once parsed: refused, never rounded.
          yield* Effect.flatMap(keyed, (credential) =>
            send({
              method: "POST",
              path: "/pets",
              credential,
              body: `{"name":${JSON.stringify(run.petName())},"categoryId":9007199254740993}`,
              headers: { "content-type": "application/json" }
            })).pipe(Effect.flatMap((exchange) => expectError(exchange, 400)))
        })
      ),
      check(
        "extension.unknown-field",
        "extension",
        "createPet: an unknown field is 400 naming it",
        Effect.gen(function*() {
          const exchange = yield* createPet({ name: run.petName(), categoryId: 1, categoryID: 2 })
          yield* expectError(exchange, 400)
          yield* ensure(exchange.text.includes("categoryID"), exchange, "the answer to name the field categoryID")
        })
      ),
      check(
        "extension.details",
        "extension",
        "createPet: a 400 lists every offending field in details",
        Effect.gen(function*() {
          const exchange = yield* createPet({ name: 42, categoryId: "x", status: "adopted" })
          yield* expectError(exchange, 400)
          const details = (exchange.json as { details?: unknown }).details
          const paths = Array.isArray(details)
            ? details.map((detail) => (detail as { path?: unknown })?.path)
            : []
          const missing = ["body.name", "body.categoryId", "body.status"].filter((path) => !paths.includes(path))
          yield* ensure(
            missing.length === 0,
            exchange,
            "details with the paths body.name, body.categoryId and body.status"
          )
        })
      ),
      check(
        "extension.malformed-json",
        "extension",
        "createPet: malformed JSON is 400",
        Effect.gen(function*() {
          const credential = yield* keyed
          const exchange = yield* send({
            method: "POST",
            path: "/pets",
            credential,
            body: "{\"name\": \"Rex\",",
            headers: { "content-type": "application/json" }
          })
          yield* expectError(exchange, 400)
        })
      ),
      check(
        "extension.media-type",
        "extension",
        "createPet: a body not sent as application/json is 415",
        Effect.gen(function*() {
          const credential = yield* keyed
          const json = JSON.stringify({ name: run.petName(), categoryId: 1 })
          yield* expectError(
            yield* send({
              method: "POST",
              path: "/pets",
              credential,
              body: json,
              headers: { "content-type": "text/plain" }
            }),
            415
          )
          const withCharset = yield* send({
            method: "POST",
            path: "/pets",
            credential,
            body: json,
            headers: { "content-type": "application/json; charset=utf-8" }
          })
          yield* expectStatus(withCharset, 201)
        })
      ),
      check(
        "extension.too-large",
        "extension",
        "createPet: a body over 16 KiB is 413",
        Effect.gen(function*() {
          yield* expectError(yield* createPet({ name: "x".repeat(17 * 1024), categoryId: 1 }), 413)
        })
      ),
      check(
        "extension.method-not-allowed",
        "extension",
        "DELETE /pets is 405 with Allow: GET, HEAD, POST",
        Effect.gen(function*() {
          const credential = yield* keyed
          const exchange = yield* send({ method: "DELETE", path: "/pets", credential })
          yield* expectError(exchange, 405)
          const allow = (header(exchange, "allow") ?? "").split(",").map((method) => method.trim().toUpperCase())
          yield* ensure(
            ["GET", "HEAD", "POST"].every((method) => allow.includes(method)),
            exchange,
            "Allow naming GET, HEAD and POST",
            `Allow: ${header(exchange, "allow") ?? "(none)"}`
          )
        })
      ),
      check(
        "extension.unknown-path",
        "extension",
        "an unknown path under /v1 is 404 with an Error body",
        Effect.gen(function*() {
          yield* expectError(yield* get("/conformance-no-such-path"), 404)
        })
      ),
      check(
        "extension.head",
        "extension",
        "HEAD is answered wherever GET is",
        Effect.gen(function*() {
          const credential = yield* keyed
          const exchange = yield* send({ method: "HEAD", path: "/pets?limit=1", credential })
          yield* expectStatus(exchange, 200)
        })
      ),
      check(
        "extension.limit-bounds",
        "extension",
        "listPets: limit 0, 101, 1.5, 1e1, 0x10 or given twice is 400, never clamped",
        Effect.gen(function*() {
          for (const query of ["limit=0", "limit=101", "limit=1.5", "limit=1e1", "limit=0x10", "limit=5&limit=6"]) {
            yield* expectError(yield* get(`/pets?${query}`), 400)
          }
        })
      ),
      check(
        "extension.status-filter-invalid",
        "extension",
        "listPets: an unknown status is 400",
        Effect.gen(function*() {
          yield* expectError(yield* get("/pets?status=adopted"), 400)
        })
      ),
      check(
        "extension.ascending",
        "extension",
        "listPets: pets come in ascending id order",
        Effect.gen(function*() {
          yield* moreThanAPage
          const exchange = yield* get("/pets?limit=100")
          const ids = idsOf(yield* listOf(exchange, "a JSON array of Pets"))
          const index = ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]!)
          yield* ensure(index === -1, exchange, "ids in ascending order", `id ${ids[index]} after ${ids[index - 1]}`)
        })
      ),
      check(
        "extension.pagination",
        "extension",
        "listPets: Link rel=\"next\" continues after the page, skipping and repeating nothing",
        Effect.gen(function*() {
          yield* moreThanAPage
          const whole = yield* get("/pets?limit=4")
          const expected = idsOf(yield* listOf(whole, "a JSON array of Pets"))
          const first = yield* get("/pets?limit=2")
          const firstIds = idsOf(yield* listOf(first, "a JSON array of Pets"))
          const next = nextLink(first)
          yield* ensure(
            next !== undefined,
            first,
            "Link: <…>; rel=\"next\" (more pets follow)",
            `Link: ${header(first, "link") ?? "(none)"}`
          )
          yield* ensure(
            URL.canParse(next!),
            first,
            "an absolute URL in the next link",
            `Link: ${header(first, "link")}`
          )
          const second = yield* get(next!)
          const ids = [...firstIds, ...idsOf(yield* listOf(second, "a JSON array of Pets"))]
          yield* ensure(
            ids.join() === expected.join(),
            second,
            `the two pages to be the first four pets: ${expected.join(", ")}`,
            `${ids.join(", ")}`
          )
        })
      ),
      check(
        "extension.pagination-filter",
        "extension",
        "listPets: the next link keeps the status filter",
        Effect.gen(function*() {
          yield* moreThanAPage
          const first = yield* get("/pets?status=available&limit=1")
          yield* listOf(first, "a JSON array of Pets")
          const next = nextLink(first)
          yield* ensure(
            next !== undefined,
            first,
            "Link: <…>; rel=\"next\"",
            `Link: ${header(first, "link") ?? "(none)"}`
          )
          const second = yield* get(next!)
          const page = yield* listOf(second, "a JSON array of Pets")
          yield* ensure(
            page.length === 1 && page[0]!.status === "available",
            second,
            "one available pet",
            describeResponse(second)
          )
        })
      ),
      check(
        "extension.cursor-invalid",
        "extension",
        "listPets: a malformed cursor is 400",
        Effect.gen(function*() {
          yield* expectError(yield* get("/pets?cursor=not-a-cursor%21"), 400)
        })
      ),
      check(
        "extension.deprecation",
        "extension",
        "getPet: Deprecation, Sunset and a successor Link on every answer, errors too",
        Effect.gen(function*() {
          const pet = yield* aCreatedPet
          for (const exchange of [yield* get(`/pets/${pet.id}`), yield* get(`/pets/${UNKNOWN_PET_ID}`)]) {
            const sunset = Date.parse(header(exchange, "sunset") ?? "")
            yield* ensure(
              header(exchange, "deprecation") === DEPRECATION && sunset === SUNSET &&
                /<\/v1\/pets>\s*;\s*rel="?successor-version"?/.test(header(exchange, "link") ?? ""),
              exchange,
              `Deprecation: ${DEPRECATION}, Sunset: ${
                new Date(SUNSET).toUTCString()
              }, Link: </v1/pets>; rel="successor-version"`,
              describeResponse(exchange, ["deprecation", "sunset", "link"])
            )
          }
        })
      ),
      check(
        "extension.pet-id-invalid",
        "extension",
        "getPet: a petId that is not a positive integer is 400",
        Effect.gen(function*() {
          for (const id of ["abc", "0", "-1", "1.5"]) yield* expectError(yield* get(`/pets/${id}`), 400)
        })
      ),
      check(
        "extension.idempotency-replay",
        "extension",
        "createPet: a retry with the same Idempotency-Key and body replays the first answer",
        Effect.gen(function*() {
          const credential = yield* keyed
          const request = {
            method: "POST",
            path: "/pets",
            credential,
            json: { name: run.petName(), categoryId: 13 },
            headers: { "idempotency-key": `conformance-${run.runId}-replay` }
          }
          const original = yield* send(request)
          yield* expectStatus(original, 201)
          const pet = yield* decodeBody(Pet, original, "a Pet")
          const replay = yield* send(request)
          yield* expectStatus(replay, 201)
          const replayed = yield* decodeBody(Pet, replay, "the same Pet")
          yield* ensure(
            samePet(pet, replayed) && header(replay, "location") === header(original, "location") &&
              header(replay, "idempotent-replayed") === "true",
            replay,
            `the first answer again (${showPet(pet)}, Location: ${
              header(original, "location")
            }) with Idempotent-Replayed: true`,
            describeResponse(replay, ["location", "idempotent-replayed"])
          )
        })
      ),
      check(
        "extension.idempotency-reuse",
        "extension",
        "createPet: the same Idempotency-Key with another body is 422 idempotency_key_reused",
        Effect.gen(function*() {
          const credential = yield* keyed
          const headers = { "idempotency-key": `conformance-${run.runId}-reuse` }
          yield* expectStatus(
            yield* send({
              method: "POST",
              path: "/pets",
              credential,
              json: { name: run.petName(), categoryId: 1 },
              headers
            }),
            201
          )
          const reused = yield* send({
            method: "POST",
            path: "/pets",
            credential,
            json: { name: run.petName(), categoryId: 2 },
            headers
          })
          yield* expectError(reused, 422)
          yield* ensure(
            (reused.json as { code?: unknown }).code === "idempotency_key_reused",
            reused,
            "code idempotency_key_reused"
          )
        })
      ),
      check(
        "extension.request-id",
        "extension",
        "X-Request-Id is echoed when sane, generated otherwise",
        Effect.gen(function*() {
          const credential = yield* keyed
          const given = `conformance-${run.runId}.request:1`
          const echoed = yield* send({ path: "/pets?limit=1", credential, headers: { "x-request-id": given } })
          yield* ensure(
            header(echoed, "x-request-id") === given,
            echoed,
            `X-Request-Id: ${given}`,
            describeResponse(echoed, ["x-request-id"])
          )
          const insane = yield* send({ path: "/pets?limit=1", credential, headers: { "x-request-id": "not sane!" } })
          const generated = header(insane, "x-request-id") ?? ""
          yield* ensure(
            generated !== "" && generated !== "not sane!",
            insane,
            "an X-Request-Id of the service's own, since \"not sane!\" is not 1–128 characters of [A-Za-z0-9._:-]",
            describeResponse(insane, ["x-request-id"])
          )
        })
      ),
      check(
        "extension.scheme-case",
        "extension",
        "the Bearer scheme is case-insensitive",
        Effect.gen(function*() {
          if (key === undefined) return yield* noKey
          yield* expectStatus(yield* send({ path: "/pets?limit=1", credential: withKey(key, "bearer") }), 200)
        })
      ),
      check(
        "extension.auth-first",
        "extension",
        "authentication comes before validation: an invalid body without a key is 401",
        Effect.gen(function*() {
          yield* expectError(yield* send({ method: "POST", path: "/pets", credential: anonymous, json: {} }), 401)
        })
      )
    ]

    return { name: GENERAL_PHASE, checks: [...pets, ...validation, ...authentication, ...headers, ...extension] }
  })
