import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Logger, Option, References } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { createServer } from "node:http"
import { ApiKeys } from "./auth/ApiKeys.ts"
import { AppConfig, describeConfig } from "./config.ts"
import { Database } from "./db/Database.ts"
import { DrainBeforeClosing, Draining } from "./drain.ts"
import { renderUnrouted } from "./http/errors.ts"
import { PublicUrl } from "./http/PublicUrl.ts"
import { IdempotencyKeys } from "./idempotency/IdempotencyKeys.ts"
import { AdminRoutes, PublicRoutes } from "./http/routes.ts"
import { Pets } from "./pets/Pets.ts"
import { Quota, quotaStoreKind } from "./quota/Quota.ts"

/** Where the listeners ended up (a port of 0 picks a free one). */
export class ListenAddresses extends Context.Service<ListenAddresses, {
  readonly public: string
  readonly admin: Option.Option<string>
}>()("@petstore/server/ListenAddresses") {}

/** Path parameters up to 1,000 characters reach their route (and its validation) instead of the catch-all. */
const routerConfig = { maxParamLength: 1_000 }

/**
 * A client gets 10 s to send its headers and 30 s for the whole request, checked
 * every second: a slowloris cannot hold connections.
 */
const slowClientLimits = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000
}

/**
 * Builds every route first and only then listens, so the server never accepts
 * a connection it cannot answer yet: once `/healthz` answers, everything does.
 */
const listen = <E, R>(routes: Layer.Layer<never, E, R>, options: { readonly host: string; readonly port: number }) =>
  Effect.gen(function*() {
    const router = yield* HttpRouter.toHttpEffect(routes.pipe(Layer.provide(NodeHttpServer.layerHttpServices))).pipe(
      Effect.provideService(HttpRouter.RouterConfig, routerConfig)
    )
    const handler = Effect.catchCause(router, renderUnrouted)
    const context = yield* Layer.build(
      HttpServer.serve(handler).pipe(
        Layer.provideMerge(NodeHttpServer.layerServer(() => createServer(slowClientLimits), options))
      )
    )
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

const Listeners = Layer.effect(
  ListenAddresses,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const publicAddress = yield* listen(PublicRoutes, { host: config.host, port: config.port })
    const adminAddress = Option.isSome(config.adminToken) || config.metricsPublic
      ? Option.some(yield* listen(AdminRoutes, { host: config.adminHost, port: config.adminPort }))
      : Option.none()
    yield* Effect.logInfo("listening").pipe(
      Effect.annotateLogs({ public: publicAddress, admin: Option.getOrElse(adminAddress, () => "disabled") })
    )
    return ListenAddresses.of({ public: publicAddress, admin: adminAddress })
  })
)

const Services = Layer.mergeAll(
  Pets.layer,
  ApiKeys.layer,
  IdempotencyKeys.layer,
  Quota.layerFromConfig,
  PublicUrl.layer,
  Draining.layer
).pipe(
  Layer.provideMerge(Database.layer)
)

const LogConfig = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  yield* Effect.logInfo("configuration").pipe(
    Effect.annotateLogs({ ...describeConfig(config), quotaStore: quotaStoreKind(config) })
  )
}))

/** JSON lines for machines by default; `LOG_FORMAT=pretty` for people at a terminal. */
const Logging = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return Layer.mergeAll(
    Logger.layer([config.logFormat === "pretty" ? Logger.consolePretty() : Logger.consoleJson]),
    Layer.succeed(References.MinimumLogLevel, config.logLevel)
  )
}))

/** Traces go to the OTLP/HTTP collector at OTEL_EXPORTER_OTLP_ENDPOINT when it is set; otherwise nowhere. */
const Tracing = Layer.unwrap(Effect.gen(function*() {
  const { otlpEndpoint } = yield* AppConfig
  if (Option.isNone(otlpEndpoint)) return Layer.empty
  const url = new URL("v1/traces", otlpEndpoint.value.href.endsWith("/") ? otlpEndpoint.value : `${otlpEndpoint.value.href}/`)
  return OtlpTracer.layer({ url: url.href, resource: { serviceName: "petstore" }, exportInterval: "1 second" }).pipe(
    Layer.provide(OtlpSerialization.layerJson),
    Layer.provide(FetchHttpClient.layer)
  )
}))

/** The whole server, given its configuration. */
export const ServerLive = DrainBeforeClosing.pipe(
  Layer.provideMerge(Listeners),
  Layer.provide(LogConfig),
  Layer.provideMerge(Services),
  Layer.provide(Logging),
  Layer.provide(Tracing)
)
