import type { OrderStatus, PetStatus } from "@petstore/contract"
import { Data } from "effect"

/** The pet is there but not `available` (its status now), so it cannot be ordered. */
export class PetNotOrderable extends Data.TaggedError("PetNotOrderable")<{
  readonly petId: number
  readonly status: PetStatus
}> {}

/** No order has this id, in the caller's scope. */
export class OrderMissing extends Data.TaggedError("OrderMissing")<{ readonly orderId: number }> {}

/** The order is not `placed` (its status now), so it cannot move. */
export class OrderNotPlaced extends Data.TaggedError("OrderNotPlaced")<{
  readonly orderId: number
  readonly status: OrderStatus
}> {}
