import { CurrentApiKey, DEFAULT_PAGE_SIZE, PetstoreApi } from "@petstore/contract"
import { Effect } from "effect"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { answerPetMissing, etagOf, PetChanges } from "../pets/PetChanges.ts"
import { type CreatedPet, PetCreation } from "../pets/PetCreation.ts"
import { Pets, type StoredPet } from "../pets/Pets.ts"
import { withoutDatabaseError } from "./databaseFailures.ts"
import { decodeCursor, pageHeaders } from "./pagination.ts"
import { PublicUrl } from "./PublicUrl.ts"

/** 201 with the pet's `Location`, and `Idempotent-Replayed` when it is the stored answer to a retry. */
const createdAnswer = ({ stored, replayed }: CreatedPet) =>
  HttpApiSchema.withHeaders({
    body: stored.pet,
    headers: {
      location: `/v1/pets/${stored.pet.id}`,
      etag: etagOf(stored),
      ...(replayed ? { "idempotent-replayed": "true" as const } : {})
    }
  })

/** The pet with its `ETag`. */
const versionedAnswer = (stored: StoredPet) =>
  HttpApiSchema.withHeaders({ body: stored.pet, headers: { etag: etagOf(stored) } })

export const PetsHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "pets",
  Effect.fn(function*(handlers) {
    const pets = withoutDatabaseError(yield* Pets)
    const petCreation = withoutDatabaseError(yield* PetCreation)
    const petChanges = withoutDatabaseError(yield* PetChanges)
    const publicUrl = yield* PublicUrl

    return handlers
      .handle("listPets", ({ query, request }) => {
        // A pipeline rather than a generator, and no cursor to decode on a first page: the hottest operation.
        const listAfter = (after: number) => {
          const pageQuery = { limit: query.limit ?? DEFAULT_PAGE_SIZE, status: query.status, after }
          return Effect.map(pets.list(pageQuery), (page) =>
            HttpApiSchema.withHeaders({
              body: page.pets,
              headers: pageHeaders(page.nextAfter, pageQuery, (path) => publicUrl.of(request, path))
            }))
        }
        return query.cursor === undefined ? listAfter(0) : Effect.flatMap(decodeCursor(query.cursor), listAfter)
      })
      .handle(
        "createPet",
        ({ headers, payload }) =>
          CurrentApiKey.use((key) =>
            petCreation.create(payload, { apiKeyId: key.id, idempotencyKey: headers["idempotency-key"] })
          )
            .pipe(Effect.map(createdAnswer))
      )
      .handle(
        "getPet",
        ({ params }) => pets.get(params.petId).pipe(Effect.catchTags(answerPetMissing), Effect.map(versionedAnswer))
      )
      .handle(
        "updatePet",
        ({ params, payload, headers }) =>
          petChanges.update(params.petId, payload, headers["if-match"]).pipe(Effect.map(versionedAnswer))
      )
      .handle(
        "deletePet",
        ({ params, headers }) => CurrentApiKey.use((key) => petChanges.remove(params.petId, headers["if-match"], key))
      )
  })
)
