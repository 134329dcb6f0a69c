import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ErrorBody } from "./ApiError.ts"
import { EventsGroup } from "./EventsApi.ts"
import { WebhooksGroup } from "./WebhooksApi.ts"
import { documentWebhooks } from "./webhooksDocument.ts"
import { ApiKeyAuth } from "./Middleware.ts"
import { documentApi } from "./OpenApiDocument.ts"
import { CostsNoQuota, RateLimitStatus } from "./RateLimit.ts"
import {
  CORS_PREFLIGHT_MAX_AGE_SECONDS,
  corsResponseHeaders,
  headerAbsences,
  headerNames,
  headersOf,
  responseHeaders
} from "./ResponseHeaders.ts"
import { API_BASE_PATH } from "./Versioning.ts"
import { PetsGroup } from "./PetsApi.ts"
import { StoreGroup } from "./StoreApi.ts"

const rateLimit = HttpApiEndpoint.get("rateLimit", "/rate_limit", { success: RateLimitStatus })
  .annotate(CostsNoQuota, true)
  .annotateMerge(OpenApi.annotations({
    identifier: "getRateLimit",
    summary: "Show the caller's quotas",
    description:
      "Both windows of the calling key, and any ban. Costs no quota; answered while the key is limited, not while it is banned."
  }))

export class AccountGroup extends HttpApiGroup.make("account")
  .add(rateLimit)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "The calling API key's own state: its plan and request quotas")
{}

/** The public API, version 1: everything under `/v1`. */
export class PetstoreApi extends HttpApi.make("petstore")
  .add(PetsGroup)
  .add(StoreGroup)
  .add(AccountGroup)
  .add(EventsGroup)
  .add(WebhooksGroup)
  .prefix(API_BASE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.AdditionalSchemas, [ErrorBody])
  .annotateMerge(OpenApi.annotations({
    title: "Animal Adoption Store Service",
    version: "1.0.0",
    description: "Pets available for adoption. Every operation needs `Authorization: Bearer <API_KEY>`, " +
      "and every answer carries the caller's rate-limit headers.\n\n" +
      "From a web page on another origin (CORS, off by default): when the deployment's `CORS_ALLOWED_ORIGINS` " +
      "allows the page's origin, every answer carries `Access-Control-Allow-Origin` and " +
      "`Access-Control-Expose-Headers`, and a preflight (`OPTIONS` on any path, with `Origin` and " +
      "`Access-Control-Request-Method`) is answered 204 before authentication, spending no quota, with " +
      `\`Access-Control-Allow-Origin\`, \`Access-Control-Allow-Methods\` (the path's methods), ` +
      "`Access-Control-Allow-Headers` (the request headers its operations read), " +
      `\`Access-Control-Max-Age: ${CORS_PREFLIGHT_MAX_AGE_SECONDS}\` and \`Vary: Origin\`. From another origin a ` +
      "preflight is 204 without them, so the browser refuses the call. The preflight is the browser's, not an " +
      "operation, so no path lists it.",
    license: { name: "MIT", identifier: "MIT" },
    transform: (spec) =>
      documentWebhooks(
        documentApi({
          basePath: API_BASE_PATH,
          defaultServers: [{
            url: API_BASE_PATH,
            description: "This server: the address this document was served from"
          }],
          errorSchema: "Error",
          headerNames,
          headers: { ...responseHeaders, ...corsResponseHeaders },
          absences: headerAbsences,
          headersOf
        })(spec)
      )
  }))
{}

/**
 * The public API as the OpenAPI document and the docs page describe it, with
 * the servers a deployment names (`OPENAPI_SERVERS`), each ending in `/v1`.
 * Without any, the document names its own origin (`/v1`, relative).
 */
export const documentedPetstoreApi = (servers: ReadonlyArray<OpenApi.OpenAPISpecServer>) =>
  servers.length === 0 ? PetstoreApi : PetstoreApi.annotateMerge(OpenApi.annotations({ servers }))
