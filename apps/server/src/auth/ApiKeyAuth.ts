import { AdminAuth, ApiKeyAuth, Unauthorized } from "@petstore/contract"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config.ts"
import { type ApiKey, ApiKeys } from "./ApiKeys.ts"

/** The key the current request authenticated with. */
export class CurrentApiKey extends Context.Service<CurrentApiKey, ApiKey>()("@petstore/server/auth/CurrentApiKey") {}

const unauthorized = new Unauthorized({
  message: "A valid API key is required: send `Authorization: Bearer <API_KEY>`"
})

export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return ApiKeyAuth.of({
      apiKey: Effect.fnUntraced(function*(httpEffect, { credential }) {
        const key = yield* Effect.orDie(apiKeys.authenticate(credential))
        if (Option.isNone(key)) return yield* Effect.fail(unauthorized)
        return yield* Effect.provideService(httpEffect, CurrentApiKey, key.value)
      })
    })
  })
)

const sameSecret = (given: string, expected: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const { adminToken } = yield* AppConfig
    return AdminAuth.of({
      adminToken: Effect.fnUntraced(function*(httpEffect, { credential }) {
        if (Option.isNone(adminToken) || !sameSecret(Redacted.value(credential), Redacted.value(adminToken.value))) {
          return yield* Effect.fail(
            new Unauthorized({ message: "A valid admin token is required: send `Authorization: Bearer $ADMIN_TOKEN`" })
          )
        }
        return yield* httpEffect
      })
    })
  })
)
