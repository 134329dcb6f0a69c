import { Effect } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { AdminApi } from "./AdminApi.ts"
import { PetstoreApi } from "./PetstoreApi.ts"

/** The contract's paths carry `/v1` already, so a base URL that ends in it is taken back to its origin. */
const originOf = (baseUrl: string) => baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

const withBearer = (token: string) => (client: HttpClient.HttpClient) =>
  client.pipe(HttpClient.mapRequest(HttpClientRequest.bearerToken(token)))

/**
 * A typed client of the public API. `baseUrl` is the service's address, with
 * or without the trailing `/v1`. Needs an `HttpClient` (e.g. `FetchHttpClient.layer`).
 */
export const makePetstoreClient = (options: { readonly baseUrl: string; readonly apiKey: string }) =>
  HttpApiClient.make(PetstoreApi, {
    baseUrl: originOf(options.baseUrl),
    transformClient: withBearer(options.apiKey)
  })

/** A typed client of the admin API, as used by `pnpm keys`. */
export const makeAdminClient = (options: { readonly baseUrl: string; readonly adminToken: string }) =>
  HttpApiClient.make(AdminApi, {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    transformClient: withBearer(options.adminToken)
  })

export type PetstoreClient = Effect.Success<ReturnType<typeof makePetstoreClient>>
export type AdminClient = Effect.Success<ReturnType<typeof makeAdminClient>>
