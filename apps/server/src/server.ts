import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Logger, Option, References } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { AdminAudit } from "./auth/AdminAudit.ts"
import { ApiKeys } from "./auth/ApiKeys.ts"
import { AppConfig, quotaStoreKind } from "./config.ts"
import { describeConfig } from "./configDescription.ts"
import { Database } from "./db/Database.ts"
import { DrainBeforeClosing, Draining } from "./drain.ts"
import { answerClientError } from "./http/clientError.ts"
import { renderUnrouted } from "./http/errors.ts"
import { PublicUrl } from "./http/PublicUrl.ts"
import { IdempotencyKeys } from "./idempotency/IdempotencyKeys.ts"
import { AdminRoutes, PublicRoutes } from "./http/routes.ts"
import { answerStarting, cannotListen, HeldAddresses, type Listener, listenersOf } from "./listeners.ts"
import { batchedJsonLogger } from "./observability/jsonLog.ts"
import { OrderDesk } from "./orders/OrderDesk.ts"
import { Orders } from "./orders/Orders.ts"
import { PetChanges } from "./pets/PetChanges.ts"
import { PetCreation } from "./pets/PetCreation.ts"
import { Pets } from "./pets/Pets.ts"
import { Quota } from "./quota/Quota.ts"
import { Events } from "./events/Events.ts"
import { Deliveries } from "./webhooks/Deliveries.ts"
import { Dispatcher } from "./webhooks/Dispatcher.ts"
import { WebhookDesk } from "./webhooks/WebhookDesk.ts"
import { WebhookEndpoints } from "./webhooks/WebhookEndpoints.ts"

/** Where the listeners ended up (a port of 0 picks a free one). */
export class ListenAddresses extends Context.Service<ListenAddresses, {
  readonly public: string
  readonly admin: Option.Option<string>
}>()("@petstore/server/ListenAddresses") {}

/**
 * Path parameters up to 1,000 characters reach their route (and its validation) instead of the catch-all.
 * Paths match as the contract spells them: `/v1/pets/`, `/v1//pets` and `/v1/PETS` are unknown paths (404),
 * where the router's defaults would answer them as `/v1/pets`.
 */
const routerConfig = {
  maxParamLength: 1_000,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false,
  caseSensitive: true
}

/**
 * A client gets 10 s to send its headers and 30 s for the whole request, checked
 * every second: a slowloris cannot hold connections. An idle connection stays
 * open `KEEP_ALIVE_TIMEOUT` seconds, for the balancer in front to close first.
 */
const connectionLimits = (keepAliveTimeoutSeconds: number) => ({
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: keepAliveTimeoutSeconds * 1_000,
  connectionsCheckingInterval: 1_000
})

/**
 * At shutdown (after the drain, before the listener closes), every keep-alive connection closes as soon as it
 * is idle, and an answer given from then on says `Connection: close`: the listener's close ends only the
 * connections idle at that moment, and one that answers a request after it would otherwise hold the process
 * for the whole `KEEP_ALIVE_TIMEOUT`.
 */
const closeConnectionsWhenIdle = (server: Server) => {
  server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
    response.shouldKeepAlive = false
  })
  server.closeIdleConnections()
  const sweep = setInterval(() => server.closeIdleConnections(), 100).unref()
  server.once("close", () => clearInterval(sweep))
}

/**
 * Builds every route first and only then listens, so the server never accepts
 * a connection it cannot answer yet: once `/healthz` answers, everything does.
 */
const listen = <E, R>(routes: Layer.Layer<never, E, R>, listener: Listener) =>
  Effect.gen(function*() {
    const held = Option.flatMapNullishOr(
      yield* Effect.serviceOption(HeldAddresses),
      (addresses) => addresses.takeOver(listener.host, listener.port)
    )
    const router = yield* HttpRouter.toHttpEffect(routes.pipe(Layer.provide(NodeHttpServer.layerHttpServices))).pipe(
      Effect.provideService(HttpRouter.RouterConfig, routerConfig)
    )
    const handler = Effect.catchCause(router, renderUnrouted)
    const { keepAliveTimeoutSeconds } = yield* AppConfig
    const nodeServer = createServer(connectionLimits(keepAliveTimeoutSeconds)).on("clientError", answerClientError)
    // The platform listens first and installs its request handler after: a request in between (a held socket
    // has a queue of them) would have nobody to answer it. Until then this one does, and then steps aside.
    const untilServed = (request: IncomingMessage, response: ServerResponse) => {
      if (nodeServer.listenerCount("request") === 1) answerStarting(request, response)
    }
    nodeServer.on("request", untilServed)
    const context = yield* Layer.build(
      HttpServer.serve(handler).pipe(
        Layer.provideMerge(
          NodeHttpServer.layerServer(
            () => nodeServer,
            // Node's `server.listen(handle)` takes a listening server's socket over; its options type lacks it.
            Option.isSome(held)
              ? held.value as unknown as NodeHttpServer.Options
              : { host: listener.host, port: listener.port }
          )
        )
      )
    ).pipe(Effect.catchTag("ServeError", (error) => Effect.fail(cannotListen(listener, error.cause))))
    nodeServer.off("request", untilServed)
    // Added after the platform's own finalizer, so it runs before the platform closes the listener.
    yield* Effect.addFinalizer(() => Effect.sync(() => closeConnectionsWhenIdle(nodeServer)))
    return HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  })

const Listeners = Layer.effect(
  ListenAddresses,
  Effect.gen(function*() {
    const [publicListener, adminListener] = listenersOf(yield* AppConfig)
    const publicAddress = yield* listen(PublicRoutes, publicListener!)
    const adminAddress = adminListener === undefined
      ? Option.none()
      : Option.some(yield* listen(AdminRoutes, adminListener))
    yield* Effect.logInfo("listening").pipe(
      Effect.annotateLogs({ public: publicAddress, admin: Option.getOrElse(adminAddress, () => "disabled") })
    )
    return ListenAddresses.of({ public: publicAddress, admin: adminAddress })
  })
)

const Services = Layer.mergeAll(
  Layer.mergeAll(PetCreation.layer, PetChanges.layer, OrderDesk.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(Pets.layer, Orders.layer, IdempotencyKeys.layer))
  ),
  Layer.mergeAll(WebhookDesk.layer, Dispatcher.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(Events.layer, WebhookEndpoints.layer, Deliveries.layer))
  ),
  ApiKeys.layer,
  AdminAudit.layer,
  PublicUrl.layer,
  Draining.layer
).pipe(Layer.provideMerge(Quota.layerWithDatabase(Database.layer)))

const LogConfig = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  yield* Effect.logInfo("configuration").pipe(
    Effect.annotateLogs({ ...describeConfig(config), quotaStore: quotaStoreKind(config) })
  )
}))

/** JSON lines for machines by default, written in batches (jsonLog.ts); `LOG_FORMAT=pretty` for people at a terminal. */
const Logging = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  return Layer.mergeAll(
    Logger.layer([config.logFormat === "pretty" ? Logger.consolePretty() : batchedJsonLogger()]),
    Layer.succeed(References.MinimumLogLevel, config.logLevel)
  )
}))

/**
 * Traces go to the OTLP/HTTP collector at OTEL_EXPORTER_OTLP_ENDPOINT when it is set; otherwise nowhere, and
 * spans are not even recorded: every request's spans would be timed and kept only to be dropped.
 */
const Tracing = Layer.unwrap(Effect.gen(function*() {
  const { otlpEndpoint } = yield* AppConfig
  if (Option.isNone(otlpEndpoint)) return Layer.succeed(References.TracerEnabled, false)
  const url = new URL(
    "v1/traces",
    otlpEndpoint.value.href.endsWith("/") ? otlpEndpoint.value : `${otlpEndpoint.value.href}/`
  )
  return OtlpTracer.layer({ url: url.href, resource: { serviceName: "petstore" }, exportInterval: "1 second" }).pipe(
    Layer.provide(OtlpSerialization.layerJson),
    Layer.provide(FetchHttpClient.layer)
  )
}))

/** The whole server, given its configuration. The configuration is logged first, before the database opens. */
export const ServerLive = DrainBeforeClosing.pipe(
  Layer.provideMerge(Listeners),
  Layer.provideMerge(Services),
  Layer.provide(LogConfig),
  Layer.provide(Logging),
  Layer.provide(Tracing)
)
