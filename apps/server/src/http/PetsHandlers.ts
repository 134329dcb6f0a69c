import {
  CurrentApiKey,
  DEFAULT_PAGE_SIZE,
  IdempotencyKeyInFlight,
  IdempotencyKeyReused,
  type NewPet,
  NotFound,
  type Pet,
  PetstoreApi
} from "@petstore/contract"
import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import { IdempotencyKeys } from "../idempotency/IdempotencyKeys.ts"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { Pets } from "../pets/Pets.ts"
import { dieOnDatabaseError } from "./errors.ts"
import { decodeCursor, encodeCursor } from "./pagination.ts"
import { PublicUrl } from "./PublicUrl.ts"

/** Two creates are the same request when their decoded bodies are equal (key order and spacing do not matter). */
const requestHash = (pet: NewPet) =>
  createHash("sha256").update(JSON.stringify([pet.name, pet.categoryId, pet.status])).digest("hex")

const created = (pet: Pet, replayed: boolean) =>
  HttpApiSchema.withHeaders({
    body: pet,
    headers: { location: `/v1/pets/${pet.id}`, ...(replayed ? { "idempotent-replayed": "true" as const } : {}) }
  })

const inFlight = new IdempotencyKeyInFlight({
  message: "A request with this Idempotency-Key is still being processed; retry shortly"
})

export const PetsHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "pets",
  Effect.fn(function*(handlers) {
    const pets = yield* Pets
    const publicUrl = yield* PublicUrl
    const idempotencyKeys = yield* IdempotencyKeys

    /** A create that a retry with the same Idempotency-Key answers again instead of repeating. */
    const createOnce = Effect.fn("createOnce")(function*(pet: NewPet, key: string) {
      const apiKeyId = (yield* CurrentApiKey).id
      const claim = yield* idempotencyKeys.claim({ apiKeyId, key }, requestHash(pet))
      switch (claim._tag) {
        case "Claimed": {
          const pet_ = yield* pets.createClaimed(pet, { apiKeyId, key, token: claim.token })
          return Option.isSome(pet_) ? created(pet_.value, false) : yield* inFlight
        }
        case "Replay": {
          const original = yield* pets.get(claim.petId)
          return Option.isSome(original) ? created(original.value, true) : yield* inFlight
        }
        case "Mismatch":
          return yield* new IdempotencyKeyReused({
            message: "This Idempotency-Key was already used with a different body; use a new key for a new pet"
          })
        case "InFlight":
          return yield* inFlight
      }
    })

    return handlers
      .handle("listPets", ({ query, request }) =>
        Effect.gen(function*() {
          const after = yield* decodeCursor(query.cursor)
          const limit = query.limit ?? DEFAULT_PAGE_SIZE
          const page = yield* pets.list({ limit, status: query.status, after }).pipe(
            dieOnDatabaseError
          )
          const link = Option.map(page.nextAfter, (afterId) => {
            const params = new URLSearchParams({ limit: String(limit) })
            if (query.status !== undefined) params.set("status", query.status)
            params.set("cursor", encodeCursor(afterId))
            return `<${publicUrl.of(request, `/v1/pets?${params}`)}>; rel="next"`
          })
          return HttpApiSchema.withHeaders({
            body: page.pets,
            headers: Option.match(link, { onNone: () => ({}), onSome: (link) => ({ link }) })
          })
        }))
      .handle("createPet", ({ payload, headers }) =>
        (headers["idempotency-key"] === undefined
          ? Effect.map(pets.create(payload), (pet) => created(pet, false))
          : createOnce(payload, headers["idempotency-key"])).pipe(dieOnDatabaseError))
      .handle("getPet", ({ params }) =>
        pets.get(params.petId).pipe(
          dieOnDatabaseError,
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new NotFound({ message: `No pet has id ${params.petId}` })),
            onSome: Effect.succeed
          }))
        ))
  })
)
