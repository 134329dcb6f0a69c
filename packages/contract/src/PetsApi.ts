import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  Forbidden,
  IdempotencyKeyInFlight,
  IdempotencyKeyReused,
  NotFound,
  PetHasOpenOrder,
  PreconditionFailed,
  ServiceUnavailable
} from "./ApiError.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters, linkResponse } from "./OpenApiDocument.ts"
import { DECIMAL_SPELLING, DecimalId, IfMatch, NewPet, Pet, PetId, PetPatch, Pets, PetStatus } from "./Pet.ts"
import { betaOperation, GET_PET_SUNSET, Stability } from "./Versioning.ts"
import { pageParameters, pageQuery } from "./Paging.ts"
import { IdempotencyKey } from "./IdempotencyKey.ts"

/** The pets group of the public API: list, add, fetch, change and delete pets. */
export const ListPetsQuery = pageQuery("pets", PetStatus)
const listPetsParameters = pageParameters("pets")

const listPets = HttpApiEndpoint.get("listPets", "/pets", {
  query: ListPetsQuery,
  success: HttpApiSchema.WithHeaders(Pets, {
    link: Schema.optionalKey(Schema.String.annotate({
      description: "`<url>; rel=\"next\"` when more pets follow",
      examples: ["<https://pets.example.com/v1/pets?limit=20&cursor=YWZ0ZXI6MjA>; rel=\"next\""]
    }))
  }),
  error: ServiceUnavailable
}).annotateMerge(OpenApi.annotations({
  identifier: "listPets",
  summary: "List pets",
  description: "Pets in ascending id order, a page at a time (keyset pagination through the `Link` header).",
  transform: listPetsParameters
}))

/** The pet's version, for `If-Match` on `PATCH` and `DELETE`: it changes whenever any field of the pet does. */
export const PetETag = Schema.String.check(Schema.isPattern(/^"[1-9][0-9]{0,15}\.[1-9][0-9]{0,15}"$/u)).annotate({
  description:
    "The pet's version (RFC 9110 strong entity tag): send it as `If-Match` to change or delete this version only",
  examples: ["\"1.1\""]
})

const createPet = HttpApiEndpoint.post("createPet", "/pets", {
  headers: { "idempotency-key": Schema.optionalKey(IdempotencyKey) },
  payload: NewPet,
  success: HttpApiSchema.WithHeaders(Pet.pipe(HttpApiSchema.status(201)), {
    location: Schema.String.check(Schema.isPattern(/^\/v1\/pets\/[1-9][0-9]{0,15}$/u)).annotate({
      description: "Path of the created pet, `/v1/pets/{id}`",
      examples: ["/v1/pets/1"]
    }),
    etag: PetETag,
    "idempotent-replayed": Schema.optionalKey(
      Schema.Literal("true").annotate({
        description: "Present when this is the stored answer to an earlier request with the same Idempotency-Key"
      })
    )
  }),
  error: [ServiceUnavailable, IdempotencyKeyInFlight, IdempotencyKeyReused]
}).annotateMerge(OpenApi.annotations({
  identifier: "createPet",
  summary: "Add a pet",
  description:
    "Unknown fields are refused. `status` defaults to `available`. With `Idempotency-Key`, a retry returns the original answer.",
  transform: (operation) =>
    linkResponse(201, {
      getPet: {
        operationId: "getPet",
        parameters: { petId: "$response.body#/id" },
        description: "The created pet, by the `id` in the answer"
      }
    })(
      describeParameters({
        "idempotency-key": {
          offByDefault: { summary: "A new unique value for each new pet, e.g. a UUID" }
        }
      })(operation)
    )
}))

const getPet = HttpApiEndpoint.get("getPet", "/pets/:petId", {
  params: { petId: DecimalId },
  success: HttpApiSchema.WithHeaders(Pet, { etag: PetETag }),
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

/**
 * Annotations of a beta operation (README "Stability"): `x-stability: beta`
 * in the OpenAPI document, beside the operation's own transform. The
 * `Stability` header on its answers follows from the `Stability` annotation.
 */
const petIdParameter = describeParameters({
  petId: { value: PetId, description: `The pet's id, a positive integer up to 2^53 − 1. ${DECIMAL_SPELLING}.` }
})

const ifMatchHeader = { "if-match": Schema.optionalKey(IfMatch) }

const updatePet = HttpApiEndpoint.patch("updatePet", "/pets/:petId", {
  params: { petId: DecimalId },
  headers: ifMatchHeader,
  payload: PetPatch,
  success: HttpApiSchema.WithHeaders(Pet, { etag: PetETag }),
  error: [NotFound, PreconditionFailed, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "updatePet",
  summary: "Change a pet's name or category",
  description:
    "Changes `name` and/or `categoryId`, checked as on create; unknown fields are refused, and so is `status`, " +
    "which changes only through orders. With `If-Match`, only if the pet is still that version (else 412).",
  transform: petIdParameter
}))

const deletePet = HttpApiEndpoint.delete("deletePet", "/pets/:petId", {
  params: { petId: DecimalId },
  headers: ifMatchHeader,
  success: HttpApiSchema.NoContent,
  error: [Forbidden, NotFound, PreconditionFailed, PetHasOpenOrder, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "deletePet",
  summary: "Delete a pet",
  description: "Staff keys only (else 403). Refused with 409 while the pet has an open order. " +
    "With `If-Match`, only if the pet is still that version (else 412).",
  transform: petIdParameter
}))

export class PetsGroup extends HttpApiGroup.make("pets")
  .add(listPets, createPet, getPet, updatePet, deletePet)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "Animals available for adoption: list them, add one, fetch one by id")
{}
