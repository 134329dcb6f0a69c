import { AdminApi, PetstoreApi, Unauthorized } from "@petstore/contract"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiSecurity } from "effect/http-api"
import { AppConfig } from "../config.ts"
import { prometheusText } from "../observability/metrics.ts"
import { AccountHandlers } from "./AccountHandlers.ts"
import { AdminDocumentRoute } from "./adminDocument.ts"
import { AdminHandlers, AuditHandlers } from "./AdminHandlers.ts"
import { DocumentRoutes } from "./anonymousSurfaces.ts"
import { AdminAuthLive, ApiKeyAuthLive, isAdminToken } from "./ApiKeyAuth.ts"
import { cors } from "./cors.ts"
import { errorResponse } from "./errors.ts"
import { EventsHandlers, WebhooksHandlers } from "./EventsHandlers.ts"
import { OrdersHandlers } from "./OrdersHandlers.ts"
import { PetsHandlers } from "./PetsHandlers.ts"
import { FaviconRoute, HealthRoutes } from "./probes.ts"
import { quotaAdmission } from "./quotaAdmission.ts"
import { RequestValidationLive } from "./RequestValidation.ts"
import { requestLog } from "./requestLog.ts"
import { adminResponseHeaders, v1ResponseHeaders } from "./responseHeaders.ts"
import { emptyParameterIsUnknownPath, unmatchedRoutes } from "./unmatchedRoutes.ts"

/**
 * Route middleware of everything under `/v1`, outermost first: CORS (a
 * preflight is answered there, before quota and key), the answer's headers
 * (and the Error shape of whatever failed), quota admission, then the route,
 * where a path with an empty parameter is an unknown path.
 */
const v1Edge = HttpRouter.middleware<{ handles: unknown }>()(Effect.gen(function*() {
  const crossOrigin = yield* cors
  const headers = yield* v1ResponseHeaders
  const admission = yield* quotaAdmission
  return (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    crossOrigin(headers(admission(emptyParameterIsUnknownPath(route))))
})).layer

/** Route middleware of the admin API: its headers (and the Error shape of whatever failed), then the route. */
const adminEdge = HttpRouter.middleware<{ handles: unknown }>()(
  (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    adminResponseHeaders(emptyParameterIsUnknownPath(route))
).layer

/** Everything under `/v1` that answers to API keys. */
const V1Routes = Layer.mergeAll(
  HttpApiBuilder.layer(PetstoreApi).pipe(
    Layer.provide(
      Layer.mergeAll(PetsHandlers, OrdersHandlers, AccountHandlers, EventsHandlers, WebhooksHandlers).pipe(
        Layer.provide(Layer.mergeAll(ApiKeyAuthLive, RequestValidationLive))
      )
    )
  ),
  unmatchedRoutes(PetstoreApi, "/v1")
).pipe(Layer.provide(v1Edge))

export const PublicRoutes = Layer.mergeAll(V1Routes, DocumentRoutes, HealthRoutes, FaviconRoute, requestLog)

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
  AdminDocumentRoute,
  HttpApiBuilder.layer(AdminApi).pipe(
    Layer.provide(
      Layer.mergeAll(AdminHandlers, AuditHandlers).pipe(
        Layer.provide(Layer.mergeAll(AdminAuthLive, RequestValidationLive))
      )
    )
  ),
  unmatchedRoutes(AdminApi, "/admin"),
  requestLog
).pipe(Layer.provide(adminEdge))
