import { makeAdminClient } from "@petstore/contract"
import { Config, Console, Effect } from "effect"
import { FetchHttpClient } from "effect/http"

// ADMIN_URL is the server's admin listener, e.g. http://127.0.0.1:8081; ADMIN_TOKEN its admin token.
const program = Effect.gen(function*() {
  const admin = yield* makeAdminClient({
    baseUrl: yield* Config.String("ADMIN_URL"),
    adminToken: yield* Config.String("ADMIN_TOKEN")
  })

  // The answer holds the key itself (`key`), shown this once: hand it over, never log it.
  const issued = yield* admin.keys.createKey({ payload: { plan: "free", name: "example" } })
  yield* Console.log(`issued ${issued.id} on the ${issued.plan} plan: ${issued.limits.perMinute} requests a minute`)

  yield* admin.keys.revokeKey({ params: { id: issued.id } })
  yield* Console.log(`revoked ${issued.id}`)

  // The admin API's errors are the same classes: no key has this id, so the call fails with `NotFound`.
  const usage = yield* admin.keys.keyUsage({ params: { id: "key_0000000000000000" } }).pipe(
    Effect.map((usage) => `key_0000000000000000 made ${usage.minute.used} requests this minute`),
    Effect.catchTag("NotFound", (error) => Effect.succeed(`no such key (${error.status}): ${error.message}`))
  )
  yield* Console.log(usage)
})

await program.pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
