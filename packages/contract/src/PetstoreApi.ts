import { Schema, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ErrorBody, IdempotencyKeyInFlight, IdempotencyKeyReused, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters, documentApi, linkResponse } from "./OpenApiDocument.ts"
import { DECIMAL_SPELLING, DecimalId, NewPet, Pet, PetId, Pets, PetStatus } from "./Pet.ts"
import { CostsNoQuota, RateLimitStatus } from "./RateLimit.ts"
import { headerNames, headersOf, responseHeaders } from "./ResponseHeaders.ts"
import { API_BASE_PATH, GET_PET_SUNSET } from "./Versioning.ts"

export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100


export const PageSize = DecimalId.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { expected: `an integer from 1 to ${MAX_PAGE_SIZE}` })
).annotate({ default: DEFAULT_PAGE_SIZE })

/**
 * `limit` is optional on both sides: a decoding default would make it required
 * for the typed client, whose input is the decoded side. The server reads a
 * missing `limit` as `DEFAULT_PAGE_SIZE`.
 */
export const ListPetsQuery = Schema.Struct({
  limit: Schema.optionalKey(PageSize.annotate({
    description: `Maximum number of pets returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`
  })),
  status: Schema.optionalKey(PetStatus),
  cursor: Schema.optionalKey(Schema.String.annotate({
    description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
  }))
})

/** `status` filters; `limit` and `cursor` page. Described by value in the OpenAPI document, where Effect would show strings. */
const listPetsParameters = describeParameters({
  limit: {
    value: Schema.toType(PageSize),
    description: `Maximum number of pets returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}). ${DECIMAL_SPELLING}.`
  },
  cursor: {
    value: Schema.String.check(Schema.isPattern(cursorAsIssued())),
    description: "Where the page starts: copy it from the previous page's `Link: <…>; rel=\"next\"` URL. " +
      "Leave it out for the first page. Treat it as opaque: the pattern shows the cursors this version issues " +
      "(ids up to 15 digits), so that schema-driven tools can make valid ones; any other value is 400.",
    offByDefault: { summary: "A cursor from a Link header (leave it out for the first page)", value: "YWZ0ZXI6MjA" }
  }
})

/**
 * The cursors this version issues, as a pattern: base64url, without padding,
 * of `after:<id>` for an id of 1 to 15 decimal digits (the server's
 * `encodeCursor`). "after:" is 6 bytes, so it encodes alone to `YWZ0ZXI6`, and
 * in each following group of three digit bytes every base64 character depends
 * on one digit only, so the id's digits map to characters one group at a time.
 */
function cursorAsIssued(): RegExp {
  const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
  const digits = (from: number) => Array.from({ length: 10 - from }, (_, i) => 0x30 + from + i)
  const anyOf = (texts: Array<string>) =>
    texts.every((text) => text.length === 1) ? `[${texts.join("")}]` : `(?:${[...new Set(texts)].join("|")})`
  /** A digit that starts a group: its two characters, the second with the next byte's high bits (another digit: 0x3_, or none). */
  const lead = (from: number, followed: boolean) =>
    anyOf(digits(from).map((b) => B64URL[b >> 2]! + B64URL[((b & 3) << 4) | (followed ? 0x3 : 0)]!))
  /** The second digit of a group: its character (the third byte's top bits are 0 for a digit or none). */
  const middle = anyOf(digits(0).map((b) => B64URL[(b & 0xf) << 2]!))
  /** The third digit of a group. */
  const last = anyOf(digits(0).map((b) => B64URL[b & 0x3f]!))
  const group = (from: number) => `${lead(from, true)}${middle}${last}`
  const tail = (from: number) => `${lead(from, false)}|${lead(from, true)}${middle}`
  return new RegExp(
    `^YWZ0ZXI6(?:${group(1)}(?:(?:${group(0)}){0,3}(?:${tail(0)})?|(?:${group(0)}){4})|${tail(1)})$`,
    "u"
  )
}

const listPets = HttpApiEndpoint.get("listPets", "/pets", {
  query: ListPetsQuery,
  success: HttpApiSchema.WithHeaders(Pets, {
    link: Schema.optionalKey(Schema.String.annotate({ description: "`<url>; rel=\"next\"` when more pets follow" }))
  }),
  error: ServiceUnavailable
}).annotateMerge(OpenApi.annotations({
  identifier: "listPets",
  summary: "List pets",
  description: "Pets in ascending id order, a page at a time (keyset pagination through the `Link` header).",
  transform: listPetsParameters
}))

/**
 * `Idempotency-Key` (IETF httpapi draft): a unique value, quoted or bare, that
 * makes a retried create return the original answer instead of a second pet.
 */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(idempotencyKeyAsSent(), { expected: "an Idempotency-Key of 1 to 255 characters" })
).annotate({
  description: "A unique value per create, e.g. a UUID; quoted (\"…\") or bare, 1–255 characters inside the quotes",
  examples: ["4f1c2a9e-7d3b-4e8a-9c61-2b5d0e7f8a13"]
}).pipe(
  Schema.decodeTo(
    Schema.String.check(
      Schema.isMinLength(1, { expected: "an Idempotency-Key of 1 to 255 characters" }),
      Schema.isMaxLength(255, { expected: "an Idempotency-Key of 1 to 255 characters" })
    ),
    SchemaTransformation.transform({
      decode: (value) => value.trim().replace(/^"(.*)"$/, "$1"),
      encode: (value) => `"${value}"`
    })
  )
)

/**
 * What the server accepts as an `Idempotency-Key` value, as a pattern the
 * OpenAPI document can carry: the value is trimmed (only tab, space and NBSP
 * can reach it: HTTP refuses other control characters in a header), then a
 * quoted value's quotes are dropped, and 1–255 characters must remain.
 */
function idempotencyKeyAsSent(): RegExp {
  const space = String.raw`\t \u00a0`
  const char = String.raw`\t\u0020-\u007e\u0080-\u00ff`
  const edge = String.raw`\u0021-\u007e\u0080-\u009f\u00a1-\u00ff`
  const edgeNotQuote = String.raw`\u0021\u0023-\u007e\u0080-\u009f\u00a1-\u00ff`
  const quoted = `"[${char}]{1,255}"`
  const bare = `[${edge}]|[${edgeNotQuote}][${char}]{0,253}[${edge}]|[${edge}][${char}]{0,253}[${edgeNotQuote}]`
  return new RegExp(`^[${space}]*(?:${quoted}|${bare})[${space}]*$`, "u")
}

const createPet = HttpApiEndpoint.post("createPet", "/pets", {
  headers: { "idempotency-key": Schema.optionalKey(IdempotencyKey) },
  payload: NewPet,
  success: HttpApiSchema.WithHeaders(Pet.pipe(HttpApiSchema.status(201)), {
    location: Schema.String.check(Schema.isPattern(/^\/v1\/pets\/[1-9][0-9]{0,15}$/u)).annotate({
      description: "Path of the created pet, `/v1/pets/{id}`",
      examples: ["/v1/pets/1"]
    }),
    "idempotent-replayed": Schema.optionalKey(Schema.Literal("true").annotate({
      description: "Present when this is the stored answer to an earlier request with the same Idempotency-Key"
    }))
  }),
  error: [ServiceUnavailable, IdempotencyKeyInFlight, IdempotencyKeyReused]
}).annotateMerge(OpenApi.annotations({
  identifier: "createPet",
  summary: "Add a pet",
  description: "Unknown fields are refused. `status` defaults to `available`. With `Idempotency-Key`, a retry returns the original answer.",
  transform: (operation) =>
    linkResponse(201, {
      getPet: {
        operationId: "getPet",
        parameters: { petId: "$response.body#/id" },
        description: "The created pet, by the `id` in the answer"
      }
    })(describeParameters({
      "idempotency-key": {
        offByDefault: { summary: "A new unique value for each new pet", value: "4f1c2a9e-7d3b-4e8a-9c61-2b5d0e7f8a13" }
      }
    })(operation))
}))

const getPet = HttpApiEndpoint.get("getPet", "/pets/:petId", {
  params: { petId: DecimalId },
  success: Pet,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  identifier: "getPet",
  summary: "Get a pet",
  description: `Deprecated: removed on ${GET_PET_SUNSET.toUTCString()}. Use \`GET /pets\` instead.`,
  deprecated: true,
  transform: describeParameters({
    petId: { value: PetId, description: `The pet's id, a positive integer up to 2^53 − 1. ${DECIMAL_SPELLING}.` }
  })
}))

export class PetsGroup extends HttpApiGroup.make("pets")
  .add(listPets, createPet, getPet)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "Animals available for adoption: list them, add one, fetch one by id")
{}

const rateLimit = HttpApiEndpoint.get("rateLimit", "/rate_limit", { success: RateLimitStatus })
  .annotate(CostsNoQuota, true)
  .annotateMerge(OpenApi.annotations({
    identifier: "getRateLimit",
    summary: "Show the caller's quotas",
    description: "Both windows of the calling key, and any ban. Costs no quota; answered while the key is limited, not while it is banned."
  }))

export class AccountGroup extends HttpApiGroup.make("account")
  .add(rateLimit)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "The calling API key's own state: its plan and request quotas")
{}

/** The public API, version 1: everything under `/v1`. */
export class PetstoreApi extends HttpApi.make("petstore")
  .add(PetsGroup)
  .add(AccountGroup)
  .prefix(API_BASE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.AdditionalSchemas, [ErrorBody])
  .annotateMerge(OpenApi.annotations({
    title: "Animal Adoption Store Service",
    version: "1.0.0",
    description: "Pets available for adoption. Every operation needs `Authorization: Bearer <API_KEY>`, " +
      "and every answer carries the caller's rate-limit headers.",
    license: { name: "MIT", identifier: "MIT" },
    transform: documentApi({
      basePath: API_BASE_PATH,
      defaultServers: [{ url: API_BASE_PATH, description: "This server: the address this document was served from" }],
      errorSchema: "Error",
      headerNames,
      headers: responseHeaders,
      headersOf
    })
  }))
{}

/**
 * The public API as the OpenAPI document and the docs page describe it, with
 * the servers a deployment names (`OPENAPI_SERVERS`), each ending in `/v1`.
 * Without any, the document names its own origin (`/v1`, relative).
 */
export const documentedPetstoreApi = (servers: ReadonlyArray<OpenApi.OpenAPISpecServer>) =>
  servers.length === 0 ? PetstoreApi : PetstoreApi.annotateMerge(OpenApi.annotations({ servers }))

