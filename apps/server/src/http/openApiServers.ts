import { API_BASE_PATH } from "@petstore/contract"
import { Option } from "effect"
import type { OpenApi } from "effect/http-api"
import type { OpenApiServer } from "../config.ts"

/**
 * The servers the OpenAPI document names, each ending in /v1: `OPENAPI_SERVERS`
 * (`URL [description], …`); else `PUBLIC_BASE_URL` + /v1; else none, and the
 * document's default, `/v1` relative to wherever it is served, names this origin.
 */
export const documentServers = (
  openApiServers: Option.Option<ReadonlyArray<OpenApiServer>>,
  publicBaseUrl: Option.Option<URL>
): ReadonlyArray<OpenApi.OpenAPISpecServer> =>
  Option.getOrElse(openApiServers, () =>
    Option.match(publicBaseUrl, {
      onNone: () => [],
      onSome: (
        base
      ) => [{ url: `${base.toString().replace(/\/+$/, "")}${API_BASE_PATH}`, description: "PUBLIC_BASE_URL" }]
    }))
