import { NotFound, PetstoreApi, ServiceUnavailable } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import type { DatabaseError } from "../db/Database.ts"
import { Pets } from "../pets/Pets.ts"
import { decodeCursor, encodeCursor } from "./pagination.ts"
import { PublicUrl } from "./PublicUrl.ts"

const unavailable = (_: DatabaseError) =>
  Effect.fail(new ServiceUnavailable({ message: "The database is unavailable; retry shortly" }))

export const PetsHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "pets",
  Effect.fn(function*(handlers) {
    const pets = yield* Pets
    const publicUrl = yield* PublicUrl

    return handlers
      .handle("listPets", ({ query, request }) =>
        Effect.gen(function*() {
          const after = yield* decodeCursor(query.cursor)
          const page = yield* pets.list({ limit: query.limit, status: query.status, after }).pipe(
            Effect.catchTag("DatabaseError", unavailable)
          )
          const link = Option.map(page.nextAfter, (afterId) => {
            const params = new URLSearchParams({ limit: String(query.limit) })
            if (query.status !== undefined) params.set("status", query.status)
            params.set("cursor", encodeCursor(afterId))
            return `<${publicUrl.of(request, `/v1/pets?${params}`)}>; rel="next"`
          })
          return HttpApiSchema.withHeaders({
            body: page.pets,
            headers: Option.match(link, { onNone: () => ({}), onSome: (link) => ({ link }) })
          })
        }))
      .handle("createPet", ({ payload }) =>
        pets.create(payload).pipe(
          Effect.catchTag("DatabaseError", unavailable),
          Effect.map((pet) => HttpApiSchema.withHeaders({ body: pet, headers: { location: `/v1/pets/${pet.id}` } }))
        ))
      .handle("getPet", ({ params }) =>
        pets.get(params.petId).pipe(
          Effect.catchTag("DatabaseError", unavailable),
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new NotFound({ message: `No pet has id ${params.petId}` })),
            onSome: Effect.succeed
          }))
        ))
  })
)
