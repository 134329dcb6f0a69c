import { ErrorBody, errorStatusByCode } from "@petstore/contract"
import { Schema } from "effect"
import { describeRequest, describeResponse, type Exchange } from "./http.ts"
import type { Failure } from "./model.ts"

/**
 * A rule every response of the run must keep. Rather than spend requests of
 * its own, an invariant looks at every response the other checks received.
 */
export interface Invariant {
  readonly id: string
  readonly appliesTo: (exchange: Exchange) => boolean
  /** Why the exchange breaks the rule, or `undefined` when it keeps it. */
  readonly violation: (exchange: Exchange) => { readonly expected: string; readonly received: string } | undefined
}

const nonNegativeInteger = /^\d+$/

/** Whether an answer is a browser's CORS preflight: the invariants that hold of operations do not apply to it. */
const isPreflight = (exchange: Exchange) =>
  exchange.method === "OPTIONS" && exchange.requestHeaders["access-control-request-method"] !== undefined

export const rateLimitHeadersPresent: Invariant = {
  id: "headers.present",
  // A browser's preflight is no operation: it carries no key and spends no quota (docs/security.md, CORS).
  appliesTo: (exchange) => !isPreflight(exchange),
  violation: (exchange) => {
    const wrong = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"].filter((name) =>
      !nonNegativeInteger.test(exchange.headers.get(name)?.trim() ?? "")
    )
    return wrong.length === 0 ? undefined : {
      expected: "X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset as non-negative integers (spec §8)",
      received: `${wrong.join(", ")} ${wrong.length === 1 ? "is" : "are"} missing or not an integer: ${
        describeResponse(exchange)
      }`
    }
  }
}

/** The spec's Error: `code`, `message` and `status`; any string will do for `code`, whose values the spec leaves open. */
const SpecError = Schema.Struct({ code: Schema.String, message: Schema.String, status: Schema.Int })
const isSpecError = Schema.is(SpecError)

/** Why a response is not the spec's Error with `status` equal to the HTTP status, or `undefined` when it is. */
export const errorShapeProblem = (exchange: Exchange): string | undefined => {
  if (!isSpecError(exchange.json)) {
    return exchange.json === undefined
      ? "the body is not JSON"
      : "the body is not {code: string, message: string, status: integer}"
  }
  if (exchange.json.status !== exchange.status) {
    return `its status field is ${exchange.json.status}, not ${exchange.status}`
  }
  return undefined
}

const isErrorResponse = (exchange: Exchange) => exchange.status >= 400 && exchange.method !== "HEAD"

export const errorBodies: Invariant = {
  id: "errors.shape",
  // "The body of a 429 response is not shown" (spec §7): any body will do there.
  appliesTo: (exchange) => isErrorResponse(exchange) && exchange.status !== 429,
  violation: (exchange) => {
    const problem = errorShapeProblem(exchange)
    return problem === undefined ? undefined : {
      expected: `an Error body {code, message, status: ${exchange.status}} (spec §7)`,
      received: `${problem}: ${describeResponse(exchange)}`
    }
  }
}

/** The README's error codes by status, as the contract lists them (the store area's 403, 409s and 412 included). */
export const errorCodes: Record<number, ReadonlyArray<string>> = Object.entries(errorStatusByCode).reduce<
  Record<number, Array<string>>
>((byStatus, [code, status]) => ({ ...byStatus, [status]: [...(byStatus[status] ?? []), code] }), {})

/** A request to one of the spec's operations: `GET /pets`, `POST /pets` or `GET /pets/{petId}`. */
const isSpecOperation = (exchange: Exchange) => {
  const path = new URL(exchange.url).pathname
  return /\/pets\/?$/.test(path) ?
    exchange.method === "GET" || exchange.method === "POST" :
    /\/pets\/[^/]+\/?$/.test(path) && exchange.method === "GET"
}

/** The media type of a Content-Type, without its parameters. */
const mediaType = (exchange: Exchange) =>
  (exchange.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase()

export const jsonBodies: Invariant = {
  id: "media.json",
  appliesTo: (exchange) => isSpecOperation(exchange) && exchange.text !== "",
  violation: (exchange) => {
    const problem = mediaType(exchange) !== "application/json"
      ? `Content-Type is ${exchange.headers.get("content-type") ?? "missing"}`
      : exchange.json === undefined
      ? "the body is not JSON"
      : undefined
    return problem === undefined ? undefined : {
      expected: "a body sent as Content-Type: application/json, and JSON (spec §1, §4)",
      received: `${problem}: ${describeResponse(exchange, ["content-type"])}`
    }
  }
}

const isErrorBody = Schema.is(ErrorBody)

export const exactErrorBodies: Invariant = {
  id: "errors.exact",
  appliesTo: isErrorResponse,
  violation: (exchange) => {
    // `requestId` is the service's documented extension (the answer's X-Request-Id); checked by `errors.request-id`.
    const allowedKeys = exchange.status === 400
      ? ["code", "message", "status", "details", "requestId"]
      : ["code", "message", "status", "requestId"]
    const json = exchange.json
    const extra = typeof json === "object" && json !== null
      ? Object.keys(json).filter((key) => !allowedKeys.includes(key))
      : []
    const codes = errorCodes[exchange.status]
    const problem = !(exchange.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json")
      ? `Content-Type is ${exchange.headers.get("content-type") ?? "missing"}`
      : !isErrorBody(json)
      ? "the body is not the contract's Error"
      : extra.length > 0
      ? `it has other fields: ${extra.join(", ")}`
      : codes !== undefined && !codes.includes(json.code)
      ? `code is ${json.code}`
      : undefined
    return problem === undefined ? undefined : {
      expected: `exactly {code, message, status${exchange.status === 400 ? ", details" : ""}} as application/json` +
        (codes === undefined ? "" : `, code ${codes.join(" or ")}`),
      received: `${problem}: ${describeResponse(exchange)}`
    }
  }
}

/** The README's `requestId`: every error body names the request as its `X-Request-Id` does, for a support ticket. */
export const errorRequestIds: Invariant = {
  id: "errors.request-id",
  appliesTo: (exchange) =>
    isErrorResponse(exchange) && typeof exchange.json === "object" && exchange.json !== null &&
    !Array.isArray(exchange.json),
  violation: (exchange) => {
    const requestId = (exchange.json as { requestId?: unknown }).requestId
    const header = exchange.headers.get("x-request-id") ?? undefined
    return header !== undefined && requestId === header ? undefined : {
      expected: "an error body whose requestId is the answer's X-Request-Id",
      received: `requestId ${JSON.stringify(requestId) ?? "missing"}, X-Request-Id ${header ?? "missing"}: ${
        describeResponse(exchange, ["x-request-id"])
      }`
    }
  }
}

export const noStoreHeaders: Invariant = {
  id: "headers.no-store",
  appliesTo: () => true,
  violation: (exchange) =>
    (exchange.headers.get("cache-control") ?? "").toLowerCase().includes("no-store") &&
      (exchange.headers.get("x-content-type-options") ?? "").toLowerCase() === "nosniff" &&
      (exchange.headers.get("x-request-id") ?? "") !== ""
      ? undefined
      : {
        expected: "Cache-Control: no-store, X-Content-Type-Options: nosniff and an X-Request-Id",
        received: describeResponse(exchange, ["cache-control", "x-content-type-options", "x-request-id"])
      }
}

export const INVARIANTS: ReadonlyArray<Invariant> = [
  rateLimitHeadersPresent,
  errorBodies,
  jsonBodies,
  exactErrorBodies,
  errorRequestIds,
  noStoreHeaders
]

interface Tally {
  checked: number
  broken: number
  first: Failure | undefined
}

/** Collects, for each invariant, how many responses it applied to and the first that broke it. */
export const makeObservations = () => {
  const tallies = new Map(
    INVARIANTS.map((invariant) => [invariant.id, { checked: 0, broken: 0, first: undefined } as Tally])
  )
  return {
    observe: (exchange: Exchange) => {
      for (const invariant of INVARIANTS) {
        const tally = tallies.get(invariant.id)!
        if (!invariant.appliesTo(exchange)) continue
        tally.checked++
        const violation = invariant.violation(exchange)
        if (violation === undefined) continue
        tally.broken++
        tally.first ??= { request: describeRequest(exchange), ...violation }
      }
    },
    tally: (id: string): Readonly<Tally> => tallies.get(id)!
  }
}
