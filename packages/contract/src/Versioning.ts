import { Context } from "effect"
import { OpenApi } from "effect/http-api"

/** The version segment (spec §9): the prefix of every path, and the end of every server URL in the OpenAPI document. */
export const API_BASE_PATH = "/v1"

/** The day `GET /pets/{petId}` was deprecated. */
export const GET_PET_DEPRECATED_SINCE = new Date("2026-11-22T00:00:00Z")

/** The day `GET /pets/{petId}` is removed (spec §9). */
export const GET_PET_SUNSET = new Date("2030-12-05T00:00:00Z")

/**
 * What every answer of `GET /pets/{petId}`, errors included, says of its
 * deprecation: RFC 9745 `Deprecation` (the Unix time it took effect), RFC 8594
 * `Sunset`, and the operation that replaces it.
 */
export const getPetDeprecationHeaders = {
  deprecation: `@${GET_PET_DEPRECATED_SINCE.getTime() / 1000}`,
  sunset: GET_PET_SUNSET.toUTCString(),
  link: `<${API_BASE_PATH}/pets>; rel="successor-version"`
} as const

/**
 * An operation's stability (README "Stability"). Operations without it are
 * stable. A `beta` operation carries `x-stability: beta` in the OpenAPI
 * document and `Stability: beta` on every answer: fields may be added to it,
 * and a breaking change is announced in the changelog, with `Deprecation` first.
 */
export class Stability extends Context.Service<Stability, "beta">()("@petstore/contract/Stability") {}

/** A beta operation's document annotations: its own, and `x-stability: beta` (answers say `Stability: beta`). */
export const betaOperation = (annotations: {
  readonly identifier: string
  readonly summary: string
  readonly description: string
  readonly transform?: (operation: Record<string, any>) => Record<string, any>
}) =>
  OpenApi.annotations({
    ...annotations,
    transform: (operation) => ({ ...(annotations.transform?.(operation) ?? operation), "x-stability": "beta" })
  })

/** The `Stability` header of every answer of a beta operation. */
export const betaStabilityHeader = { stability: "beta" } as const
