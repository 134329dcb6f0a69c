import { type ApiError, InvalidRequest, NotFound } from "@petstore/contract"
import { Effect } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { errorResponse } from "./errors.ts"

/**
 * A host and an optional port, as `Host` may name them (RFC 9110 §7.2): a DNS name or IPv4 address, or an
 * IPv6 address in brackets. Nothing else reaches a `Link` header, where `>`, `;`, `,` or a space would
 * let a client write links of its own (docs/security.md, "Host and links").
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9._-]{1,253})(?::([0-9]{1,5}))?$/

const isValidHost = (host: string) => {
  const match = HOST.exec(host)
  return match !== null && (match[1] === undefined || Number(match[1]) <= 65_535)
}

/**
 * Characters the router stops a path at, as if what follows were not there: find-my-way reads `;` as the
 * start of matrix parameters and `#` as a fragment. `PATCH /v1/pets/3;admin` would change pet 3 while a
 * proxy's rule for `/v1/pets/3` never saw that path; the README promises exact matches instead.
 */
const IGNORED_BY_THE_ROUTER = /[;#]/

const pathOf = (url: string) => url.split("?")[0]!

/**
 * Why the request is refused before any route, if it is: a target that is not a path (an absolute-form
 * target whose authority is no URL, `GET http://a:99999/x`: the platform turns valid ones into their path
 * and `Host`), a `Host` that is no host[:port], a path the router would match only by ignoring part of it.
 */
export const targetRefusal = (request: HttpServerRequest.HttpServerRequest): ApiError | undefined => {
  if (!request.url.startsWith("/")) {
    const message = "not a path: an absolute URL must have a valid host and port (RFC 9112 §3.2.2)"
    return new InvalidRequest({
      message: `Invalid request. target: ${message}`,
      details: [{ path: "target", message }]
    })
  }
  const host = request.headers.host
  if (host !== undefined && !isValidHost(host)) {
    const message = "not a host with an optional port, such as api.example.com or 127.0.0.1:8080"
    return new InvalidRequest({
      message: `Invalid request. header.host: ${message}`,
      details: [{ path: "header.host", message }]
    })
  }
  const path = pathOf(request.url)
  if (IGNORED_BY_THE_ROUTER.test(path)) return new NotFound({ message: `No operation at ${request.method} ${path}` })
  return undefined
}

/** What the OpenAPI document promises on every answer, a refusal before any route included. */
const everyAnswer = { "cache-control": "no-store", "x-content-type-options": "nosniff" }

/**
 * Answers what `targetRefusal` refuses before the router sees it, on both listeners; such a request
 * spends no quota and carries no rate-limit headers, like a request Node's parser refuses.
 */
export const refuseUnroutableTargets = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const refusal = targetRefusal(request)
    return refusal === undefined ? httpEffect : Effect.succeed(errorResponse(refusal, everyAnswer))
  })
