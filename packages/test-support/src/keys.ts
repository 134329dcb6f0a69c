import { type KeyRole, makeAdminClient, type Plan, type QuotaLimits } from "@petstore/contract"
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"

/** The admin token every test server is started with. Not a secret: it only opens test servers. */
export const ADMIN_TOKEN = "test-admin-token-not-a-secret"

export interface CreatedTestKey {
  readonly id: string
  readonly key: string
}

/** A new API key through the admin API at `adminUrl`, with the contract's typed client: a customer's unless `role` says otherwise. */
export const createKey = (
  adminUrl: string,
  plan: Plan = "free",
  limits?: QuotaLimits,
  adminToken: string = ADMIN_TOKEN,
  role?: KeyRole
): Promise<CreatedTestKey> =>
  makeAdminClient({ baseUrl: adminUrl, adminToken }).pipe(
    Effect.flatMap((client) =>
      client.keys.createKey({ payload: { plan, ...(limits ? { limits } : {}), ...(role ? { role } : {}) } })
    ),
    Effect.map(({ id, key }) => ({ id, key })),
    Effect.provide(FetchHttpClient.layer),
    Effect.runPromise
  )
