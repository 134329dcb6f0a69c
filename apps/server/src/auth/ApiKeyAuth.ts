import { AdminAuth, ApiKeyAuth, Unauthorized } from "@petstore/contract"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config.ts"
import type { ApiKey } from "./ApiKeys.ts"

/**
 * The key the `/v1` edge found in the request's bearer credential, if any.
 * The edge looks it up once, because quota is spent per key before the route runs.
 */
export const RequestCaller = Context.Reference<Option.Option<ApiKey>>("@petstore/server/auth/RequestCaller", {
  defaultValue: () => Option.none()
})

const unauthorized = new Unauthorized({
  message: "A valid API key is required: send `Authorization: Bearer <API_KEY>`"
})

/** Lets through only requests whose caller the edge identified by a live key (then `RequestCaller` holds it). */
export const ApiKeyAuthLive = Layer.succeed(ApiKeyAuth, {
  apiKey: (httpEffect) =>
    Effect.gen(function*() {
      const caller = yield* RequestCaller
      if (Option.isNone(caller)) return yield* Effect.fail(unauthorized)
      return yield* httpEffect
    })
})

/**
 * The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3), which generic HTTP
 * clients read to learn how to authenticate. A request that sent no bearer
 * credential is only told the scheme (§3.1: no error code then); one whose
 * token was refused also learns `error="invalid_token"`.
 */
export const bearerChallenge = (realm: string, credential: Redacted.Redacted<string>) =>
  Redacted.value(credential) === "" ? `Bearer realm="${realm}"` : `Bearer realm="${realm}", error="invalid_token"`

/** Whether a bearer credential is the operator's admin token (compared in constant time). */
export const isAdminToken = (adminToken: Option.Option<Redacted.Redacted<string>>, credential: Redacted.Redacted<string>) => {
  if (Option.isNone(adminToken)) return false
  const given = Buffer.from(Redacted.value(credential))
  const expected = Buffer.from(Redacted.value(adminToken.value))
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.gen(function*() {
    const { adminToken } = yield* AppConfig
    return AdminAuth.of({
      adminToken: Effect.fnUntraced(function*(httpEffect, { credential }) {
        if (!isAdminToken(adminToken, credential)) {
          return yield* Effect.fail(
            new Unauthorized({ message: "A valid admin token is required: send `Authorization: Bearer $ADMIN_TOKEN`" })
          )
        }
        return yield* httpEffect
      })
    })
  })
)
