import { Schema } from "effect"
import { PetId, PositiveSafeInt } from "./Pet.ts"

export const OrderId = PositiveSafeInt.annotate({
  description: "Unique identifier of the order, assigned on placement (int64 on the wire, 1 to 2^53 − 1)",
  examples: [1]
})
export type OrderId = typeof OrderId.Type

/**
 * `placed` is the one open status: a placed order holds its pet `pending`.
 * `delivered` (the pet is `sold`) and `cancelled` (the pet is `available`
 * again) are final.
 */
export const OrderStatus = Schema.Literals(["placed", "delivered", "cancelled"]).annotate({
  identifier: "OrderStatus",
  description:
    "`placed` (open: its pet is pending), then `delivered` (the pet is sold) or `cancelled` (the pet is available again)"
})
export type OrderStatus = typeof OrderStatus.Type

const Timestamp = Schema.String.annotate({ format: "date-time", examples: ["2026-11-22T10:15:30.123Z"] })

export const Order = Schema.Struct({
  id: OrderId,
  petId: PetId,
  status: OrderStatus,
  placedAt: Timestamp.annotate({ description: "When the order was placed (ISO 8601, UTC)" }),
  updatedAt: Timestamp.annotate({ description: "When its status last changed; `placedAt` until then (ISO 8601, UTC)" })
}).annotate({ identifier: "Order", description: "An order of one pet, which belongs to the API key that placed it" })
export type Order = typeof Order.Type

export const Orders = Schema.Array(Order).annotate({
  identifier: "Orders",
  description: "A page of orders, in ascending id order"
})

/** What a client sends to place an order: the pet, which must be `available`. */
export const NewOrder = Schema.Struct({
  petId: PetId
}).annotate({ identifier: "NewOrder", description: "The pet to order; it must be `available`" })
export type NewOrder = typeof NewOrder.Type
