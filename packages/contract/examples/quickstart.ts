import { PetstoreClient } from "@petstore/contract"
import { Config, Console, Effect, Layer, Option, Stream } from "effect"
import { FetchHttpClient } from "effect/http"

const program = Effect.gen(function*() {
  const petstore = yield* PetstoreClient

  // A plain object; `status` is optional and defaults to "available".
  const rex = yield* petstore.createPet({ name: "Rex", categoryId: 1 })
  yield* Console.log(`created ${rex.name}: id ${rex.id}, ${rex.status}`)

  // One page at a time: `next` is the cursor of the following page, if any.
  const page = yield* petstore.listPets({ limit: 2 })
  yield* Console.log(`first page: ${page.pets.length} pets, more to follow: ${Option.isSome(page.next)}`)
  if (Option.isSome(page.next)) {
    const second = yield* petstore.listPets({ limit: 2, cursor: page.next.value })
    yield* Console.log(`second page starts at id ${second.pets[0]?.id}`)
  }

  // Or every pet, the client following `Link: <…>; rel="next"` from page to page.
  const available = yield* Stream.runCollect(petstore.allPets({ status: "available" }))
  yield* Console.log(`available: ${available.map((pet) => pet.name).join(", ")}`)
})

// PETSTORE_URL is the service's address, e.g. https://pets.example.com/v1; PETSTORE_API_KEY a key (psk_…).
const PetstoreLive = Layer.unwrap(Effect.gen(function*() {
  const baseUrl = yield* Config.String("PETSTORE_URL")
  const apiKey = yield* Config.Redacted("PETSTORE_API_KEY")
  return PetstoreClient.layer({ baseUrl, apiKey })
}))

await program.pipe(
  Effect.provide(PetstoreLive.pipe(Layer.provide(FetchHttpClient.layer))),
  Effect.runPromise
)
