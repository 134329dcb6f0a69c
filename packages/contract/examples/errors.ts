import { PetstoreClient } from "@petstore/contract"
import { Config, Console, Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"

const program = Effect.gen(function*() {
  const petstore = yield* PetstoreClient

  // One error by its tag: no order has this id, so the service answers 404 and the call fails with `NotFound`.
  const lookup = yield* petstore.getOrder(9_007_199_254_740_991).pipe(
    Effect.map((order) => `order ${order.id} is ${order.status}`),
    Effect.catchTag("NotFound", (error) => Effect.succeed(`no such order (${error.status}): ${error.message}`))
  )
  yield* Console.log(lookup)

  // Several, each its own way: a pet can be ordered once, so a second order for it is refused.
  const rex = yield* petstore.createPet({ name: "Rex", categoryId: 1 })
  const first = yield* petstore.placeOrder({ petId: rex.id })
  yield* Console.log(`ordered ${rex.name}: order ${first.id} is ${first.status}`)
  const second = yield* petstore.placeOrder({ petId: rex.id }).pipe(
    Effect.map((order) => `ordered ${rex.name} again: order ${order.id}`),
    Effect.catchTags({
      PetNotAvailable: (error) => Effect.succeed(`refused (${error.code}): ${error.message}`),
      RateLimited: (error) => Effect.succeed(`no quota left (${error.code}): try again later`)
    })
  )
  yield* Console.log(second)
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
