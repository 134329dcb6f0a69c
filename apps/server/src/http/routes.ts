import { AdminApi, API_BASE_PATH, documentedPetstoreApi, PetstoreApi, ServiceUnavailable, Unauthorized } from "@petstore/contract"
import { Effect, Layer, Option, Scope } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar, HttpApiSecurity, OpenApi } from "effect/http-api"
import { AppConfig } from "../config.ts"
import { AdminAuthLive, ApiKeyAuthLive, isAdminToken } from "../auth/ApiKeyAuth.ts"
import { Database } from "../db/Database.ts"
import { sql } from "../db/sql.ts"
import { prometheusText } from "../observability/metrics.ts"
import { Draining } from "../drain.ts"
import { AccountHandlers } from "./AccountHandlers.ts"
import { AdminHandlers } from "./AdminHandlers.ts"
import { databaseUnavailable, errorResponse } from "./errors.ts"
import { EventsHandlers, WebhooksHandlers } from "./EventsHandlers.ts"
import { OrdersHandlers } from "./OrdersHandlers.ts"
import { PetsHandlers } from "./PetsHandlers.ts"
import { quotaAdmission } from "./quotaAdmission.ts"
import { RequestValidationLive } from "./RequestValidation.ts"
import { requestLog } from "./requestLog.ts"
import { adminResponseHeaders, v1ResponseHeaders } from "./responseHeaders.ts"
import { emptyParameterIsUnknownPath, unmatchedRoutes } from "./unmatchedRoutes.ts"

/**
 * Route middleware of everything under `/v1`, outermost first: the answer's
 * headers (and the Error shape of whatever failed), quota admission, then the
 * route, where a path with an empty parameter is an unknown path.
 */
const v1Edge = HttpRouter.middleware<{ handles: unknown }>()(Effect.gen(function*() {
  const headers = yield* v1ResponseHeaders
  const admission = yield* quotaAdmission
  return (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    headers(admission(emptyParameterIsUnknownPath(route)))
})).layer

/** Route middleware of the admin API: its headers (and the Error shape of whatever failed), then the route. */
const adminEdge = HttpRouter.middleware<{ handles: unknown }>()(
  (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) => adminResponseHeaders(emptyParameterIsUnknownPath(route))
).layer

/** Everything under `/v1` that answers to API keys. */
const V1Routes = Layer.mergeAll(
  HttpApiBuilder.layer(PetstoreApi).pipe(
    Layer.provide(
      Layer.mergeAll(PetsHandlers, OrdersHandlers, AccountHandlers, EventsHandlers, WebhooksHandlers).pipe(Layer.provide(Layer.mergeAll(ApiKeyAuthLive, RequestValidationLive)))
    )
  ),
  unmatchedRoutes(PetstoreApi, "/v1")
).pipe(Layer.provide(v1Edge))

/**
 * The servers the OpenAPI document names, each ending in /v1: `OPENAPI_SERVERS`
 * (`URL [description], …`); else `PUBLIC_BASE_URL` + /v1; else none, and the
 * document's default, `/v1` relative to wherever it is served, names this origin.
 */
export const documentServers = (
  openApiServers: Option.Option<string>,
  publicBaseUrl: Option.Option<URL>
): ReadonlyArray<OpenApi.OpenAPISpecServer> =>
  Option.match(openApiServers, {
    onSome: (servers) =>
      servers.split(",").map((entry) => {
        const [url, ...description] = entry.trim().split(/\s+/)
        return description.length === 0 ? { url: url! } : { url: url!, description: description.join(" ") }
      }),
    onNone: () =>
      Option.match(publicBaseUrl, {
        onNone: () => [],
        onSome: (base) => [{ url: `${base.toString().replace(/\/+$/, "")}${API_BASE_PATH}`, description: "PUBLIC_BASE_URL" }]
      })
  })

/**
 * The OpenAPI document and the docs page, from the contract with this
 * deployment's servers. Built once: the document only changes with the contract.
 */
const DocumentRoutes = Layer.unwrap(Effect.gen(function*() {
  const { openApiServers, publicBaseUrl } = yield* AppConfig
  const api = documentedPetstoreApi(documentServers(openApiServers, publicBaseUrl))
  const document = HttpServerResponse.jsonUnsafe(OpenApi.fromApi(api))
  return Layer.mergeAll(
    HttpRouter.use((router) => router.add("GET", `${API_BASE_PATH}/openapi.json`, document)),
    HttpRouter.use(Effect.fnUntraced(function*(router) {
      // Scalar's page is built on its first visit, not at start-up: its bundle is 6 MB of JavaScript, held
      // twice in the heap once loaded (12 MB of a 53 MB idle heap, and V8 sizes the old generation from it).
      const scope = yield* Scope.Scope
      const docsPage = yield* Effect.cached(
        HttpRouter.toHttpEffect(HttpApiScalar.layer(api, { path: "/docs" })).pipe(Scope.provide(scope))
      )
      yield* router.add("GET", "/docs", Effect.flatten(docsPage))
    }))
  )
}))

/** Liveness says the process serves requests; readiness says its database answers too, and it is not draining. */
const HealthRoutes = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const db = yield* Database
  const { isDraining } = yield* Draining
  const shuttingDown = new ServiceUnavailable({ message: "The server is shutting down" })
  yield* router.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
  yield* router.add(
    "GET",
    "/readyz",
    Effect.flatMap(isDraining, (draining) =>
      draining
        ? Effect.succeed(errorResponse(shuttingDown))
        : db.query(sql`SELECT 1`).pipe(
          Effect.timeout("2 seconds"),
          Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready", store: db.kind })),
          Effect.orElseSucceed(() => errorResponse(databaseUnavailable))
        ))
  )
}))

export const PublicRoutes = Layer.mergeAll(V1Routes, DocumentRoutes, HealthRoutes, requestLog)

/** Prometheus metrics, for the admin token, or for anyone who reaches the admin listener with METRICS_PUBLIC. */
const MetricsRoute = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const { adminToken, metricsPublic } = yield* AppConfig
  const bearerCredential = HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)
  yield* router.add(
    "GET",
    "/metrics",
    Effect.gen(function*() {
      if (!metricsPublic && !isAdminToken(adminToken, yield* bearerCredential)) {
        return errorResponse(new Unauthorized({ message: "A valid admin token is required" }))
      }
      return HttpServerResponse.text(yield* prometheusText, { contentType: "text/plain; version=0.0.4" })
    })
  )
}))

export const AdminRoutes = Layer.mergeAll(
  MetricsRoute,
  HttpApiBuilder.layer(AdminApi).pipe(
    Layer.provide(AdminHandlers.pipe(Layer.provide(Layer.mergeAll(AdminAuthLive, RequestValidationLive))))
  ),
  unmatchedRoutes(AdminApi, "/admin"),
  requestLog
).pipe(Layer.provide(adminEdge))
