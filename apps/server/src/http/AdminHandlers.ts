import { AdminApi, type ApiKeyId, ApiKeyView, CreatedKey, NotFound } from "@petstore/contract"
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type ApiKey, ApiKeys } from "../auth/ApiKeys.ts"
import { Quota } from "../quota/Quota.ts"
import { WebhookEndpoints } from "../webhooks/WebhookEndpoints.ts"
import { quotaReport } from "./rateLimitHeaders.ts"

const toView = (key: ApiKey) =>
  new ApiKeyView({
    id: key.id,
    name: key.name,
    plan: key.plan,
    limits: key.limits,
    ...(key.role === "staff" ? { role: key.role } : {}),
    createdAt: key.createdAt.toISOString()
  })

const noSuchKey = (id: ApiKeyId) => new NotFound({ message: `No live API key has id ${id}` })

export const AdminHandlers = HttpApiBuilder.group(
  AdminApi,
  "keys",
  Effect.fn(function*(handlers) {
    const apiKeys = yield* ApiKeys
    const quota = yield* Quota
    const webhookEndpoints = yield* WebhookEndpoints
    const findKey = (id: ApiKeyId) =>
      apiKeys.find(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(noSuchKey(id)), onSome: Effect.succeed }))
      )

    return handlers
      .handle("createKey", ({ payload }) =>
        apiKeys.create(payload).pipe(
          Effect.map(({ key, secret }) => new CreatedKey({ ...toView(key), key: secret })),
          Effect.catchTag("DatabaseError", Effect.die)
        ))
      .handle("listKeys", () => apiKeys.list.pipe(Effect.map((keys) => keys.map(toView)), Effect.orDie))
      .handle("updateKey", ({ params, payload }) =>
        apiKeys.update(params.id, payload).pipe(
          Effect.catchTag("DatabaseError", Effect.die),
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(noSuchKey(params.id)),
            onSome: (key) => Effect.succeed(toView(key))
          }))
        ))
      .handle("revokeKey", ({ params }) =>
        apiKeys.revoke(params.id).pipe(
          Effect.orDie,
          Effect.flatMap((revoked) => revoked ? Effect.void : Effect.fail(noSuchKey(params.id)))
        ))
      .handle("keyUsage", ({ params }) =>
        findKey(params.id).pipe(
          Effect.flatMap((key) => Effect.orDie(quota.peek(quota.keySubject(key)))),
          Effect.map((decision) => {
            const report = quotaReport(decision)
            return {
              minute: { ...report.minute, used: decision.minute.used },
              day: { ...report.day, used: Option.getOrThrow(decision.day).used },
              ban: report.ban
            }
          })
        ))
      .handle(
        "unbanKey",
        ({ params }) =>
          findKey(params.id).pipe(Effect.flatMap((key) => Effect.orDie(quota.unban(quota.keySubject(key)))))
      )
      .handle(
        "keyWebhookEndpoints",
        ({ params }) => findKey(params.id).pipe(Effect.flatMap((key) => Effect.orDie(webhookEndpoints.list(key.id))))
      )
  })
)
