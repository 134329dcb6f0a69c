import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  Forbidden,
  IdempotencyKeyInFlight,
  IdempotencyKeyReused,
  InvalidTransition,
  NotFound,
  PetNotAvailable,
  ServiceUnavailable
} from "./ApiError.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters, linkResponse } from "./OpenApiDocument.ts"
import { NewOrder, Order, OrderId, Orders, OrderStatus } from "./Order.ts"
import { DECIMAL_SPELLING, DecimalId } from "./Pet.ts"
import { betaOperation, Stability } from "./Versioning.ts"
import { pageParameters, pageQuery } from "./Paging.ts"
import { IdempotencyKey } from "./IdempotencyKey.ts"

/** The store group of the public API (beta): place, list, fetch, cancel and deliver orders. */
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
