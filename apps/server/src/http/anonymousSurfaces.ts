import {
  API_BASE_PATH,
  API_KEY_SECURITY_SCHEME,
  documentedPetstoreApi,
  RateLimited,
  ServiceUnavailable
} from "@petstore/contract"
import { Deferred, Effect, Layer, Option, Scope } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants as zlibConstants, gzip } from "node:zlib"
import { AppConfig } from "../config.ts"
import { databaseReadiness } from "../db/readiness.ts"
import { Draining } from "../drain.ts"
import { recordQuotaRefusal } from "../observability/metrics.ts"
import { Quota } from "../quota/Quota.ts"
import { answerEveryFailure, databaseUnavailable, errorResponse } from "./errors.ts"
import { anonymousSubjectOf, configuredProxyTrust } from "./quotaAdmission.ts"
import { rateLimitHeaders } from "./rateLimitHeaders.ts"
import { CurrentRequestFacts } from "./requestLog.ts"

/**
 * What anyone may ask for without a key, made cheap (README "Security"): the OpenAPI document and the docs
 * page are rendered once, compressed once per encoding asked for, and answered with validators, under the per-address anonymous
 * limit; the probes are not limited (a kubelet or a load balancer probes from a few addresses, and a
 * probe refused would take the host out of rotation) but readiness asks the database at most once a second.
 */

/**
 * A document as it is served: its bytes with a strong validator per encoding. The compressed copies are made on
 * the first request that asks for each, once per process: most processes are never asked for the docs at all.
 */
interface Representation {
  readonly contentType: string
  readonly encoded: { readonly [E in Encoding]: Effect.Effect<EncodedBody> }
}

interface EncodedBody {
  readonly body: Uint8Array
  readonly etag: string
}

type Encoding = "br" | "gzip" | "identity"

/** The docs change only with a deployment: caches may keep them a few minutes, then revalidate (a 304 is cheap). */
const CACHE_CONTROL = "public, max-age=300"

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/** Compressed in the thread pool, so a first visit does not stall other requests. */
const represent = (body: Uint8Array, contentType: string) =>
  Effect.gen(function*() {
    const digest = createHash("sha256").update(body).digest("base64url").slice(0, 22)
    const compressed = (coding: "br" | "gzip", compress: () => Promise<Uint8Array>) =>
      Effect.cached(
        Effect.promise(compress).pipe(Effect.map((bytes) => ({ body: bytes, etag: `"${digest}-${coding}"` })))
      )
    return {
      contentType,
      encoded: {
        identity: Effect.succeed({ body, etag: `"${digest}"` }),
        gzip: yield* compressed("gzip", () => gzipAsync(body, { level: zlibConstants.Z_BEST_COMPRESSION })),
        br: yield* compressed("br", () =>
          brotliAsync(body, {
            params: {
              [zlibConstants.BROTLI_PARAM_QUALITY]: 9,
              [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
              [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length
            }
          }))
      }
    } satisfies Representation
  })

/**
 * The coding `Accept-Encoding` prefers among br, gzip and identity (RFC 9110 §12.5.3): the highest
 * q-value, br before gzip before identity on a tie; `*` stands for those not named; identity is acceptable
 * unless refused by name or by `*;q=0`, and is the answer when nothing else is.
 */
export const negotiatedEncoding = (acceptEncoding: string | undefined): Encoding => {
  if (acceptEncoding === undefined) return "identity"
  const weights = new Map<string, number>()
  for (const part of acceptEncoding.split(",")) {
    const [coding, ...parameters] = part.split(";").map((piece) => piece.trim().toLowerCase())
    if (!coding) continue
    const q = parameters.find((parameter) => parameter.startsWith("q="))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    weights.set(coding, Number.isFinite(weight) && weight >= 0 && weight <= 1 ? weight : 0)
  }
  const weightOf = (coding: Encoding) => weights.get(coding) ?? weights.get("*") ?? (coding === "identity" ? 1 : 0)
  let best: Encoding = "identity"
  let bestWeight = 0
  for (const coding of ["br", "gzip", "identity"] as const) {
    const weight = weightOf(coding)
    if (weight > bestWeight) [best, bestWeight] = [coding, weight]
  }
  return best
}

/** Whether `If-None-Match` names the validator (weak comparison, RFC 9110 §13.1.2), or is `*`. */
const matchesNoneOf = (ifNoneMatch: string | undefined, etag: string) =>
  ifNoneMatch !== undefined &&
  (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag))

/** The representation the request asks for: 304 when its validator is current, else the bytes. */
const answer = (representation: Representation, request: HttpServerRequest.HttpServerRequest) => {
  const coding = negotiatedEncoding(request.headers["accept-encoding"])
  return Effect.map(
    representation.encoded[coding],
    ({ body, etag }) => answerWith(representation, request, coding, body, etag)
  )
}

const answerWith = (
  representation: Representation,
  request: HttpServerRequest.HttpServerRequest,
  coding: Encoding,
  body: Uint8Array,
  etag: string
) => {
  const headers: Record<string, string> = {
    etag,
    vary: "Accept-Encoding",
    "cache-control": CACHE_CONTROL,
    "x-content-type-options": "nosniff",
    ...(coding === "identity" ? {} : { "content-encoding": coding })
  }
  return matchesNoneOf(request.headers["if-none-match"], etag)
    ? HttpServerResponse.empty({ status: 304, headers })
    : HttpServerResponse.uint8Array(body, { headers, contentType: representation.contentType })
}

/**
 * Route middleware of the anonymous documents: the client's address spends the anonymous quota (the
 * `ANONYMOUS_RATE_LIMIT` of `/v1` without a key, the same window), and every answer carries its rate-limit
 * headers; over it, 429.
 */
const anonymousAdmission = Effect.gen(function*() {
  const quota = yield* Quota
  const trust = yield* configuredProxyTrust
  return (route: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const facts = yield* CurrentRequestFacts
      const decision = yield* quota.admit(quota.addressSubject(anonymousSubjectOf(request, trust)))
      facts.quota = decision.admitted ? "admitted" : Option.isSome(decision.bannedUntil) ? "banned" : "limited"
      if (!decision.admitted) yield* recordQuotaRefusal("anonymous", "rate_limited")
      const response = decision.admitted
        ? yield* route
        : errorResponse(
          new RateLimited({
            code: "rate_limited",
            message: "Rate limit exceeded; retry after the number of seconds in Retry-After"
          })
        )
      return HttpServerResponse.setHeaders(response, rateLimitHeaders(decision, !decision.admitted))
    }).pipe(answerEveryFailure)
})

const DocumentEdge = HttpRouter.middleware<{ handles: unknown }>()(anonymousAdmission).layer

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
        onSome: (
          base
        ) => [{ url: `${base.toString().replace(/\/+$/, "")}${API_BASE_PATH}`, description: "PUBLIC_BASE_URL" }]
      })
  })

/**
 * How Scalar shows the page. The bearer scheme is preselected, so a reader pastes a key and sends. The page
 * loads nothing from another host: Scalar's default fonts come from its own servers, so the page uses the
 * reader's system fonts instead (a deployment may be offline, or have a policy against third parties).
 */
export const scalarConfig: HttpApiScalar.ScalarConfig = {
  authentication: { preferredSecurityScheme: API_KEY_SECURITY_SCHEME },
  withDefaultFonts: false,
  customCss: ":root, .light-mode, .dark-mode {" +
    " --scalar-font: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;" +
    " --scalar-font-code: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace; }"
}

/**
 * The OpenAPI document and the docs page, from the contract with this deployment's servers. The document is
 * rendered at start-up; Scalar's page on its first visit (its bundle is 6 MB of JavaScript, held twice in the
 * heap while the page is built), and only its bytes are kept.
 */
export const DocumentRoutes = Layer.unwrap(Effect.gen(function*() {
  const { openApiServers, publicBaseUrl } = yield* AppConfig
  const api = documentedPetstoreApi(documentServers(openApiServers, publicBaseUrl))
  const document = yield* represent(Buffer.from(JSON.stringify(OpenApi.fromApi(api))), "application/json")
  const renderDocsPage = Effect.scoped(Effect.gen(function*() {
    const scalar = yield* HttpRouter.toHttpEffect(HttpApiScalar.layer(api, { path: "/docs", scalar: scalarConfig }))
    const page = yield* scalar.pipe(
      Effect.provideService(
        HttpServerRequest.HttpServerRequest,
        HttpServerRequest.fromWeb(new Request("http://localhost/docs"))
      )
    )
    if (page.body._tag !== "Uint8Array") {
      return yield* Effect.die(new Error(`The docs page is a ${page.body._tag} body`))
    }
    return yield* represent(page.body.body, page.body.contentType)
  }))
  const docsPage = yield* Effect.cached(renderDocsPage)
  return HttpRouter.use(Effect.fnUntraced(function*(router) {
    yield* router.add(
      "GET",
      `${API_BASE_PATH}/openapi.json`,
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => answer(document, request))
    )
    yield* router.add(
      "GET",
      "/docs",
      Effect.flatMap(
        Effect.zip(docsPage, HttpServerRequest.HttpServerRequest),
        ([page, request]) => answer(page, request)
      )
    )
  })).pipe(Layer.provide(DocumentEdge))
}))

/**
 * Liveness says the process serves requests; readiness says its database answers too, and it is not
 * draining. Probes that arrive while a readiness query runs share it, so a flood of probes costs one query
 * at a time, never more; nothing is kept after it ends, so no answer outlives the fault (or the recovery)
 * it saw: an earlier attempt that believed a success for a while was a suspect when a fleet's load
 * balancer took hosts out. The query runs in the routes' scope, not the probe's, so a probe whose client
 * goes away cannot cancel it for the others. Draining is read on every probe.
 */
export const HealthRoutes = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const database = yield* databaseReadiness
  const { isDraining } = yield* Draining
  const shuttingDown = new ServiceUnavailable({ message: "The server is shutting down" })
  const ready = HttpServerResponse.jsonUnsafe({ status: "ready", store: database.kind })
  const scope = yield* Scope.Scope
  let inFlight: Deferred.Deferred<boolean> | undefined
  const probe = Effect.suspend(() => {
    if (inFlight !== undefined) return Deferred.await(inFlight)
    const answer = Deferred.makeUnsafe<boolean>()
    inFlight = answer
    return database.answers.pipe(
      Effect.flatMap((isReady) => Deferred.succeed(answer, isReady)),
      // Interrupted only when the server stops: the probes waiting on it are answered "not ready".
      Effect.ensuring(Effect.suspend(() => {
        inFlight = undefined
        return Deferred.succeed(answer, false)
      })),
      Effect.forkIn(scope),
      Effect.andThen(Deferred.await(answer))
    )
  })
  yield* router.add(
    "GET",
    "/healthz",
    countedAs("/healthz", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok" })))
  )
  yield* router.add(
    "GET",
    "/readyz",
    countedAs(
      "/readyz",
      Effect.flatMap(isDraining, (draining) =>
        draining
          ? Effect.succeed(errorResponse(shuttingDown))
          : Effect.map(probe, (isReady) => isReady ? ready : errorResponse(databaseUnavailable)))
    )
  )
}))

/** Health answers count under their own path, not "unmatched": the readiness alerts read `http_requests_total{route="/readyz"}`. */
const countedAs = <A, E, R>(route: string, answer: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const facts = yield* CurrentRequestFacts
    facts.route = route
    return yield* answer
  })

/**
 * `/favicon.ico`, which browsers ask for beside every page (the docs page's included): 204, no icon, so
 * that it is not a 404 in every browser's log. It costs nothing, so it spends no quota, like the probes;
 * browsers keep the answer a day.
 */
export const FaviconRoute = HttpRouter.add(
  "GET",
  "/favicon.ico",
  countedAs(
    "/favicon.ico",
    Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { "cache-control": "public, max-age=86400" } }))
  )
)
