import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { AppConfig } from "../config.ts"

/** Absolute URLs for links: `PUBLIC_BASE_URL` when set, else the address the request was sent to. */
export class PublicUrl extends Context.Service<PublicUrl, {
  readonly of: (request: HttpServerRequest.HttpServerRequest, path: string) => string
}>()("@petstore/server/http/PublicUrl") {
  static readonly layer = Layer.effect(
    PublicUrl,
    Effect.gen(function*() {
      const { publicBaseUrl } = yield* AppConfig
      const base = Option.map(publicBaseUrl, (url) => url.toString().replace(/\/+$/, ""))
      return PublicUrl.of({
        of: (request, path) => Option.getOrElse(base, () => `http://${request.headers.host ?? "localhost"}`) + path
      })
    })
  )
}
