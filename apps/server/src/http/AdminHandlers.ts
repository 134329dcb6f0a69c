import {
  AdminApi,
  type ApiKeyId,
  ApiKeyView,
  AuditEntry,
  CreatedKey,
  DEFAULT_PAGE_SIZE,
  DEFAULT_ROLL_OVERLAP_SECONDS,
  InvalidRequest,
  type ListAuditQuery,
  MAX_KEY_LIFETIME_SECONDS,
  NotFound
} from "@petstore/contract"
import { Effect, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { AdminAudit } from "../auth/AdminAudit.ts"
import { type Actor, type ApiKey, ApiKeys } from "../auth/ApiKeys.ts"
import type { KeyExpiryRefused, KeyLimitsRefused, KeyMissing } from "../auth/KeyRefusals.ts"
import { clientAddress, type ProxyTrust } from "../net/proxyTrust.ts"
import { Quota } from "../quota/Quota.ts"
import { WebhookEndpoints } from "../webhooks/WebhookEndpoints.ts"
import { withoutDatabaseError, type WithoutDatabaseError } from "./databaseFailures.ts"
import { decodeCursor, encodeCursor } from "./pagination.ts"
import { configuredProxyTrust } from "./quotaAdmission.ts"
import { quotaReport } from "./rateLimitHeaders.ts"

const toView = (key: ApiKey) =>
  new ApiKeyView({
    id: key.id,
    name: key.name,
    plan: key.plan,
    limits: key.limits,
    ...(key.role === "staff" ? { role: key.role } : {}),
    createdAt: key.createdAt.toISOString(),
    ...(key.expiresAt === null ? {} : { expiresAt: key.expiresAt.toISOString() }),
    ...(key.previousKeyExpiresAt === null ? {} : { previousKeyExpiresAt: key.previousKeyExpiresAt.toISOString() }),
    ...(key.lastUsedAt === null ? {} : { lastUsedAt: key.lastUsedAt.toISOString() })
  })

/**
 * The contract's answer to each refusal of `ApiKeys`, taken per operation by `Effect.catchTags`: the compiler
 * checks that every refusal an operation can meet is answered.
 */
const answerKeyMissing = {
  KeyMissing: ({ keyId }: KeyMissing) => Effect.fail(new NotFound({ message: `No live API key has id ${keyId}` }))
}

const expiryReasons = {
  "not a valid date": "not a valid date",
  "in the past": "must be in the future",
  "too far ahead": `at most ${MAX_KEY_LIFETIME_SECONDS / 86_400} days ahead`
} satisfies Record<KeyExpiryRefused["reason"], string>

const answerKeyRequestRefusals = {
  KeyExpiryRefused: ({ reason }: KeyExpiryRefused) => {
    const message = expiryReasons[reason]
    return Effect.fail(
      new InvalidRequest({ message: `Invalid expiresAt: ${message}`, details: [{ path: "body.expiresAt", message }] })
    )
  },
  KeyLimitsRefused: ({ limitsGiven, plan }: KeyLimitsRefused) =>
    Effect.fail(
      limitsGiven
        ? new InvalidRequest({
          message: `The ${plan} plan has fixed limits; \`limits\` is only for enterprise keys`,
          details: [{ path: "body.limits", message: "allowed only with the enterprise plan" }]
        })
        : new InvalidRequest({
          message: "An enterprise key needs `limits`",
          details: [{ path: "body.limits", message: "required for the enterprise plan" }]
        })
    )
}

/** The audit trail's caller: the client's address as `TRUST_PROXY` finds it, as for the public listener. */
const actorOf = (trust: ProxyTrust, request: HttpServerRequest.HttpServerRequest): Actor => ({
  clientAddress: Option.match(clientAddress(trust, request.headers["x-forwarded-for"], request.remoteAddress), {
    onNone: () => "unknown",
    onSome: (address) => address.text
  })
})

export const AdminHandlers = HttpApiBuilder.group(
  AdminApi,
  "keys",
  Effect.fn(function*(handlers) {
    const apiKeys = withoutDatabaseError(yield* ApiKeys)
    const quota = withoutDatabaseError(yield* Quota)
    const webhookEndpoints = withoutDatabaseError(yield* WebhookEndpoints)
    const trust = yield* configuredProxyTrust
    const findKey = (id: ApiKeyId) => apiKeys.find(id).pipe(Effect.catchTags(answerKeyMissing))

    return handlers
      .handle("createKey", ({ payload, request }) =>
        apiKeys.create(payload, actorOf(trust, request)).pipe(
          Effect.map(({ key, secret }) => new CreatedKey({ ...toView(key), key: secret })),
          Effect.catchTags(answerKeyRequestRefusals)
        ))
      .handle(
        "listKeys",
        ({ query }) => apiKeys.list(query.state).pipe(Effect.map((keys) => keys.map(toView)))
      )
      .handle(
        "updateKey",
        ({ params, payload, request }) =>
          apiKeys.update(params.id, payload, actorOf(trust, request)).pipe(
            Effect.map(toView),
            Effect.catchTags({ ...answerKeyMissing, ...answerKeyRequestRefusals })
          )
      )
      .handle(
        "rollKey",
        ({ params, payload, request }) =>
          apiKeys.roll(params.id, payload.overlapSeconds ?? DEFAULT_ROLL_OVERLAP_SECONDS, actorOf(trust, request)).pipe(
            Effect.map(({ key, secret }) => new CreatedKey({ ...toView(key), key: secret })),
            Effect.catchTags(answerKeyMissing)
          )
      )
      .handle(
        "revokeKey",
        ({ params, request }) =>
          apiKeys.revoke(params.id, actorOf(trust, request)).pipe(Effect.catchTags(answerKeyMissing))
      )
      .handle("keyUsage", ({ params }) =>
        findKey(params.id).pipe(
          Effect.flatMap((key) => quota.peek(quota.keySubject(key))),
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
        ({ params, request }) =>
          findKey(params.id).pipe(
            Effect.flatMap((key) => quota.unban(quota.keySubject(key))),
            // The ban lives in the quota store (maybe this process's memory): its entry follows the unban.
            Effect.andThen(apiKeys.audit(params.id, "key.unbanned", actorOf(trust, request)))
          )
      )
      .handle(
        "keyWebhookEndpoints",
        ({ params }) => findKey(params.id).pipe(Effect.flatMap((key) => webhookEndpoints.list(key.id)))
      )
  })
)

/** A page of the audit trail with the next page's `Link`, relative: the admin listener's address is the operator's. */
const auditPage = (audit: WithoutDatabaseError<AdminAudit["Service"]>, query: ListAuditQuery) =>
  Effect.gen(function*() {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE
    const page = yield* audit.list({
      keyId: query.keyId,
      action: query.action,
      limit,
      before: yield* decodeCursor(query.cursor)
    })
    const link = Option.map(page.nextBefore, (before) => {
      const params = new URLSearchParams({ limit: String(limit) })
      if (query.keyId !== undefined) params.set("keyId", query.keyId)
      if (query.action !== undefined) params.set("action", query.action)
      params.set("cursor", encodeCursor(before))
      return `</admin/audit?${params}>; rel="next"`
    })
    return HttpApiSchema.withHeaders({
      body: page.entries.map((entry) =>
        new AuditEntry({
          id: String(entry.id),
          occurredAt: entry.occurredAt.toISOString(),
          action: entry.action,
          keyId: entry.keyId as ApiKeyId,
          changes: entry.changes as AuditEntry["changes"],
          clientAddress: entry.clientAddress
        })
      ),
      headers: Option.match(link, { onNone: () => ({}), onSome: (link) => ({ link }) })
    })
  })

export const AuditHandlers = HttpApiBuilder.group(
  AdminApi,
  "audit",
  Effect.fn(function*(handlers) {
    const audit = withoutDatabaseError(yield* AdminAudit)
    return handlers.handle("listAudit", ({ query }) => auditPage(audit, query))
  })
)
