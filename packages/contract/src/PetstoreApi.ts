import { Schema, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { IdempotencyKeyInFlight, IdempotencyKeyReused, NotFound, ServiceUnavailable } from "./ApiError.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { DecimalId, NewPet, Pet, Pets, PetStatus } from "./Pet.ts"
import { CostsNoQuota, RateLimitStatus } from "./RateLimit.ts"

export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

/** The day `GET /pets/{petId}` is removed (spec §9). */
export const GET_PET_SUNSET = new Date("2030-12-05T00:00:00Z")

export const PageSize = DecimalId.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { expected: `an integer from 1 to ${MAX_PAGE_SIZE}` })
)

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

const listPets = HttpApiEndpoint.get("listPets", "/pets", {
  query: ListPetsQuery,
  success: HttpApiSchema.WithHeaders(Pets, {
    link: Schema.optionalKey(Schema.String.annotate({ description: "`<url>; rel=\"next\"` when more pets follow" }))
  }),
  error: ServiceUnavailable
}).annotateMerge(OpenApi.annotations({
  summary: "List pets",
  description: "Pets in ascending id order, a page at a time (keyset pagination through the `Link` header)."
}))

/**
 * `Idempotency-Key` (IETF httpapi draft): a unique value, quoted or bare, that
 * makes a retried create return the original answer instead of a second pet.
 */
export const IdempotencyKey = Schema.String.pipe(
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
).annotate({ description: "A unique value per create, e.g. a UUID; quoted (\"…\") or bare" })

const createPet = HttpApiEndpoint.post("createPet", "/pets", {
  headers: { "idempotency-key": Schema.optionalKey(IdempotencyKey) },
  payload: NewPet,
  success: HttpApiSchema.WithHeaders(Pet.pipe(HttpApiSchema.status(201)), {
    location: Schema.String.annotate({ description: "Path of the created pet" }),
    "idempotent-replayed": Schema.optionalKey(Schema.Literal("true").annotate({
      description: "Present when this is the stored answer to an earlier request with the same Idempotency-Key"
    }))
  }),
  error: [ServiceUnavailable, IdempotencyKeyInFlight, IdempotencyKeyReused]
}).annotateMerge(OpenApi.annotations({
  summary: "Add a pet",
  description: "Unknown fields are refused. `status` defaults to `available`. With `Idempotency-Key`, a retry returns the original answer."
}))

const getPet = HttpApiEndpoint.get("getPet", "/pets/:petId", {
  params: { petId: DecimalId },
  success: Pet,
  error: [NotFound, ServiceUnavailable]
}).annotateMerge(OpenApi.annotations({
  summary: "Get a pet",
  description: `Deprecated: removed on ${GET_PET_SUNSET.toUTCString()}. Use \`GET /pets\` instead.`,
  deprecated: true
}))

export class PetsGroup extends HttpApiGroup.make("pets")
  .add(listPets, createPet, getPet)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
{}

const rateLimit = HttpApiEndpoint.get("rateLimit", "/rate_limit", { success: RateLimitStatus })
  .annotate(CostsNoQuota, true)
  .annotateMerge(OpenApi.annotations({
    summary: "Show the caller's quotas",
    description: "Both windows of the calling key, and any ban. Costs no quota; answered while the key is limited, not while it is banned."
  }))

export class AccountGroup extends HttpApiGroup.make("account")
  .add(rateLimit)
  .middleware(ApiKeyAuth)
{}

/** The public API, version 1: everything under `/v1`. */
export class PetstoreApi extends HttpApi.make("petstore")
  .add(PetsGroup)
  .add(AccountGroup)
  .prefix("/v1")
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({
    title: "Animal Adoption Store Service",
    version: "1.0.0",
    description: "Pets available for adoption. Every operation needs `Authorization: Bearer <API_KEY>`."
  }))
{}

