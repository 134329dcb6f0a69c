import { AdminAuth, ApiKeyAuth, CurrentApiKey, type RateLimited, Unauthorized } from "@petstore/contract"
import { Effect, Layer, Option, Redacted, type Types } from "effect"
import { timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config.ts"
import { traced } from "../observability/spans.ts"
import { currentAdmission } from "./quotaAdmission.ts"

const unauthorized = new Unauthorized({
  message: "A valid API key is required: send `Authorization: Bearer <API_KEY>`"
})

const tracedBearerAuth = traced("ApiKeyAuth.bearerAuth")
/** What the route may fail with here: its own failures (HttpApi's `unhandled`) or the middleware's refusals. */
type Refusal = RateLimited | Unauthorized | Types.unhandled

/**
 * Lets through only a request that quota admission admitted for a live key,
 * and provides that key to the operation. Quota admission already looked up
 * the bearer credential this is handed: it needs the caller before the route
 * is known, since every request under `/v1` spends quota. The refusals are
 * answered here, where the contract declares them: 429 (which an anonymous
 * client over its address's limit gets too), then 401.
 */
export const ApiKeyAuthLive = Layer.succeed(
  ApiKeyAuth,
  ApiKeyAuth.of({
    // A pipeline rather than a generator: it runs on every operation under /v1.
    bearerAuth: (httpEffect) =>
      tracedBearerAuth(Effect.flatMap(currentAdmission, ({ key, refusal }) =>
        Option.isSome(refusal)
          ? Effect.fail<Refusal>(refusal.value)
          : Option.isNone(key)
          ? Effect.fail<Refusal>(unauthorized)
          : Effect.provideService(httpEffect, CurrentApiKey, key.value)))
  })
)

/**
 * The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3), which generic HTTP
 * clients read to learn how to authenticate. A request that sent no bearer
 * credential is only told the scheme (§3.1: no error code then); one whose
 * token was refused also learns `error="invalid_token"`.
 */
export const bearerChallenge = (realm: string, credential: Redacted.Redacted<string>) =>
  Redacted.value(credential) === "" ? `Bearer realm="${realm}"` : `Bearer realm="${realm}", error="invalid_token"`

/** Whether a bearer credential is the operator's admin token (compared in constant time). */
export const isAdminToken = (
  adminToken: Option.Option<Redacted.Redacted<string>>,
  credential: Redacted.Redacted<string>
) => {
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
