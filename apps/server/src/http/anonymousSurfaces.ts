import { API_BASE_PATH, API_KEY_SECURITY_SCHEME, documentedPetstoreApi } from "@petstore/contract"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { HttpApiScalar, OpenApi } from "effect/http-api"
import { AppConfig } from "../config.ts"
import { DocumentEdge } from "./anonymousAdmission.ts"
import { represent } from "./compression.ts"
import { answer } from "./conditionalAnswer.ts"
import { documentServers } from "./openApiServers.ts"

/**
 * What anyone may ask for without a key, made cheap (docs/security.md, "What a caller without a key can make the server do"): the OpenAPI document and the docs
 * page are rendered once, compressed once per encoding asked for, and answered with validators, under the per-address anonymous
 * limit; the probes are not limited (a kubelet or a load balancer probes from a few addresses, and a
 * probe refused would take the host out of rotation) but readiness asks the database at most once a second.
 *
 * This file serves the documents; `compression.ts` and `conditionalAnswer.ts` make their bytes and answers,
 * `anonymousAdmission.ts` spends the anonymous quota, and `openApiServers.ts` names the document's servers.
 * The probes and the favicon, under no limit, are `probes.ts`'s.
 */

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
 * The OpenAPI document and the docs page, from the contract with this deployment's servers, each rendered on its
 * first request and only its bytes kept: Scalar's page (its bundle is 6 MB of JavaScript, held twice in the heap
 * while the page is built), and the document (about 240 KB of JSON, and a few MB of garbage while `OpenApi.fromApi`
 * builds it, which grew the young generation at start-up: issue 35's idle budget). Most processes are never asked
 * for either.
 */
export const DocumentRoutes = Layer.unwrap(Effect.gen(function*() {
  const { openApiServers, publicBaseUrl } = yield* AppConfig
  const api = documentedPetstoreApi(documentServers(openApiServers, publicBaseUrl))
  const document = yield* Effect.cached(
    Effect.suspend(() => represent(Buffer.from(JSON.stringify(OpenApi.fromApi(api))), "application/json"))
  )
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
      Effect.flatMap(
        Effect.zip(document, HttpServerRequest.HttpServerRequest),
        ([representation, request]) => answer(representation, request)
      )
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
