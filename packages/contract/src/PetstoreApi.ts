import { Schema, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  ErrorBody,
  Forbidden,
  IdempotencyKeyInFlight,
  IdempotencyKeyReused,
  InvalidTransition,
  NotFound,
  PetHasOpenOrder,
  PetNotAvailable,
  PreconditionFailed,
  ServiceUnavailable
} from "./ApiError.ts"
import { EventsGroup } from "./EventsApi.ts"
import { WebhooksGroup } from "./WebhooksApi.ts"
import { documentWebhooks } from "./webhooksDocument.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters, documentApi, linkResponse } from "./OpenApiDocument.ts"
import { NewOrder, Order, OrderId, Orders, OrderStatus } from "./Order.ts"
import { DECIMAL_SPELLING, DecimalId, IfMatch, NewPet, Pet, PetId, PetPatch, Pets, PetStatus } from "./Pet.ts"
import { CostsNoQuota, RateLimitStatus } from "./RateLimit.ts"
import {
  CORS_PREFLIGHT_MAX_AGE_SECONDS,
  corsResponseHeaders,
  headerAbsences,
  headerNames,
  headersOf,
  responseHeaders
} from "./ResponseHeaders.ts"
import { API_BASE_PATH, betaOperation, GET_PET_SUNSET, Stability } from "./Versioning.ts"

export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

export const PageSize = DecimalId.check(
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { expected: `an integer from 1 to ${MAX_PAGE_SIZE}` })
).annotate({ default: DEFAULT_PAGE_SIZE })

/**
 * The query of a keyset-paged list of `noun`, filtered by `status`. `limit` is
 * optional on both sides: a decoding default would make it required for the
 * typed client, whose input is the decoded side. The server reads a missing
 * `limit` as `DEFAULT_PAGE_SIZE`.
 */
const pageQuery = <S extends Schema.Top>(noun: string, status: S) =>
  Schema.Struct({
    limit: Schema.optionalKey(PageSize.annotate({
      description: `Maximum number of ${noun} returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`
    })),
    status: Schema.optionalKey(status),
    cursor: Schema.optionalKey(Schema.String.annotate({
      description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
    }))
  })

/** `status` filters; `limit` and `cursor` page. Described by value in the OpenAPI document, where Effect would show strings. */
const pageParameters = (noun: string) =>
  describeParameters({
    limit: {
      value: Schema.toType(PageSize),
      description:
        `Maximum number of ${noun} returned, 1–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}). ${DECIMAL_SPELLING}.`
    },
    cursor: {
      value: Schema.String.check(Schema.isPattern(cursorAsIssued())),
      description: "Where the page starts: copy it from the previous page's `Link: <…>; rel=\"next\"` URL. " +
        "Leave it out for the first page. Treat it as opaque: the pattern shows the cursors this version issues " +
        "(ids up to 15 digits), so that schema-driven tools can make valid ones; any other value is 400.",
      offByDefault: { summary: "A cursor from a Link header (leave it out for the first page)", value: "YWZ0ZXI6MjA" }
    }
  })

export const ListPetsQuery = pageQuery("pets", PetStatus)
const listPetsParameters = pageParameters("pets")

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

/**
 * `Idempotency-Key` (IETF httpapi draft): a unique value, quoted or bare, that
 * makes a retried create return the original answer instead of a second pet.
 */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(idempotencyKeyAsSent(), { expected: "an Idempotency-Key of 1 to 255 characters" })
).annotate({
  // No example value: documentation pages put one into every code sample, and a sample run twice would
  // then be a replay (or, changed, a 422). Without one, curl samples leave the header out.
  description: "A new unique value per create, e.g. a UUID (`uuidgen`); quoted (\"…\") or bare, " +
    "1–255 characters inside the quotes"
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

export const ListOrdersQuery = pageQuery("orders", OrderStatus)
const listOrdersParameters = pageParameters("orders")

const orderIdParameter = describeParameters({
  orderId: { value: OrderId, description: `The order's id, a positive integer up to 2^53 − 1. ${DECIMAL_SPELLING}.` }
})

/** From a placed order to what can be done with it next, by the `id` in the answer. */
const orderLinks = {
  getOrder: {
    operationId: "getOrder",
    parameters: { orderId: "$response.body#/id" },
    description: "This order, by its `id`"
  },
  cancelOrder: {
    operationId: "cancelOrder",
    parameters: { orderId: "$response.body#/id" },
    description: "Cancel this order: its pet is available again"
  },
  deliverOrder: {
    operationId: "deliverOrder",
    parameters: { orderId: "$response.body#/id" },
    description: "Deliver this order (staff keys): its pet is sold"
  }
}

const placeOrder = HttpApiEndpoint.post("placeOrder", "/store/orders", {
  headers: { "idempotency-key": Schema.optionalKey(IdempotencyKey) },
  payload: NewOrder,
  success: HttpApiSchema.WithHeaders(Order.pipe(HttpApiSchema.status(201)), {
    location: Schema.String.check(Schema.isPattern(/^\/v1\/store\/orders\/[1-9][0-9]{0,15}$/u)).annotate({
      description: "Path of the placed order, `/v1/store/orders/{id}`",
      examples: ["/v1/store/orders/1"]
    }),
    "idempotent-replayed": Schema.optionalKey(
      Schema.Literal("true").annotate({
        description: "Present when this is the stored answer to an earlier request with the same Idempotency-Key"
      })
    )
  }),
  error: [NotFound, PetNotAvailable, IdempotencyKeyInFlight, IdempotencyKeyReused, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "placeOrder",
  summary: "Order a pet",
  description: "Places an order for an `available` pet, which becomes `pending` in the same transaction. " +
    "Of concurrent orders for one pet exactly one succeeds; the others get 409 `pet_not_available`. " +
    "With `Idempotency-Key`, a retry returns the original answer.",
  transform: (operation) =>
    linkResponse(201, orderLinks)(
      describeParameters({
        "idempotency-key": {
          offByDefault: { summary: "A new unique value for each new order, e.g. a UUID" }
        }
      })(operation)
    )
}))

const listOrders = HttpApiEndpoint.get("listOrders", "/store/orders", {
  query: ListOrdersQuery,
  success: HttpApiSchema.WithHeaders(Orders, {
    link: Schema.optionalKey(Schema.String.annotate({
      description: "`<url>; rel=\"next\"` when more orders follow",
      examples: ["<https://pets.example.com/v1/store/orders?limit=20&cursor=YWZ0ZXI6MjA>; rel=\"next\""]
    }))
  }),
  error: ServiceUnavailable
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listOrders",
  summary: "List orders",
  description: "The caller's orders (a staff key's: every order), in ascending id order, a page at a time " +
    "(keyset pagination through the `Link` header, as `GET /pets`).",
  transform: listOrdersParameters
}))

const getOrder = HttpApiEndpoint.get("getOrder", "/store/orders/:orderId", {
  params: { orderId: DecimalId },
  success: Order,
  error: [NotFound, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "getOrder",
  summary: "Get an order",
  description: "One of the caller's orders (a staff key: any order). Another customer's order is 404.",
  transform: orderIdParameter
}))

const cancelOrder = HttpApiEndpoint.post("cancelOrder", "/store/orders/:orderId/cancel", {
  params: { orderId: DecimalId },
  success: Order,
  error: [NotFound, InvalidTransition, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "cancelOrder",
  summary: "Cancel an order",
  description: "Moves a `placed` order to `cancelled` and its pet back to `available`, together. " +
    "An order in any other status is 409 `invalid_transition`.",
  transform: orderIdParameter
}))

const deliverOrder = HttpApiEndpoint.post("deliverOrder", "/store/orders/:orderId/deliver", {
  params: { orderId: DecimalId },
  success: Order,
  error: [Forbidden, NotFound, InvalidTransition, ServiceUnavailable]
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "deliverOrder",
  summary: "Deliver an order",
  description: "Staff keys only (else 403). Moves a `placed` order to `delivered` and its pet to `sold`, together. " +
    "An order in any other status is 409 `invalid_transition`.",
  transform: orderIdParameter
}))

export class StoreGroup extends HttpApiGroup.make("store")
  .add(placeOrder, listOrders, getOrder, cancelOrder, deliverOrder)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(
    OpenApi.Description,
    "Orders of pets: an order holds its pet pending until it is delivered or cancelled (beta)"
  )
{}

const rateLimit = HttpApiEndpoint.get("rateLimit", "/rate_limit", { success: RateLimitStatus })
  .annotate(CostsNoQuota, true)
  .annotateMerge(OpenApi.annotations({
    identifier: "getRateLimit",
    summary: "Show the caller's quotas",
    description:
      "Both windows of the calling key, and any ban. Costs no quota; answered while the key is limited, not while it is banned."
  }))

export class AccountGroup extends HttpApiGroup.make("account")
  .add(rateLimit)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "The calling API key's own state: its plan and request quotas")
{}

/** The public API, version 1: everything under `/v1`. */
export class PetstoreApi extends HttpApi.make("petstore")
  .add(PetsGroup)
  .add(StoreGroup)
  .add(AccountGroup)
  .add(EventsGroup)
  .add(WebhooksGroup)
  .prefix(API_BASE_PATH)
  .annotate(HttpApi.ParseOptions, { errors: "all" })
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.AdditionalSchemas, [ErrorBody])
  .annotateMerge(OpenApi.annotations({
    title: "Animal Adoption Store Service",
    version: "1.0.0",
    description: "Pets available for adoption. Every operation needs `Authorization: Bearer <API_KEY>`, " +
      "and every answer carries the caller's rate-limit headers.\n\n" +
      "From a web page on another origin (CORS, off by default): when the deployment's `CORS_ALLOWED_ORIGINS` " +
      "allows the page's origin, every answer carries `Access-Control-Allow-Origin` and " +
      "`Access-Control-Expose-Headers`, and a preflight (`OPTIONS` on any path, with `Origin` and " +
      "`Access-Control-Request-Method`) is answered 204 before authentication, spending no quota, with " +
      `\`Access-Control-Allow-Origin\`, \`Access-Control-Allow-Methods\` (the path's methods), ` +
      "`Access-Control-Allow-Headers` (the request headers its operations read), " +
      `\`Access-Control-Max-Age: ${CORS_PREFLIGHT_MAX_AGE_SECONDS}\` and \`Vary: Origin\`. From another origin a ` +
      "preflight is 204 without them, so the browser refuses the call. The preflight is the browser's, not an " +
      "operation, so no path lists it.",
    license: { name: "MIT", identifier: "MIT" },
    transform: (spec) =>
      documentWebhooks(
        documentApi({
          basePath: API_BASE_PATH,
          defaultServers: [{
            url: API_BASE_PATH,
            description: "This server: the address this document was served from"
          }],
          errorSchema: "Error",
          headerNames,
          headers: { ...responseHeaders, ...corsResponseHeaders },
          absences: headerAbsences,
          headersOf
        })(spec)
      )
  }))
{}

/**
 * The public API as the OpenAPI document and the docs page describe it, with
 * the servers a deployment names (`OPENAPI_SERVERS`), each ending in `/v1`.
 * Without any, the document names its own origin (`/v1`, relative).
 */
export const documentedPetstoreApi = (servers: ReadonlyArray<OpenApi.OpenAPISpecServer>) =>
  servers.length === 0 ? PetstoreApi : PetstoreApi.annotateMerge(OpenApi.annotations({ servers }))
