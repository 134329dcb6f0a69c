import {
  Forbidden,
  type IdempotencyKeyInFlight,
  type IdempotencyKeyReused,
  InvalidTransition,
  NotFound,
  type Order,
  PetNotAvailable
} from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { IdempotencyKeys } from "../idempotency/IdempotencyKeys.ts"
import { answerPetMissing } from "../pets/PetChanges.ts"
import type { OrderMissing, OrderNotPlaced, PetNotOrderable } from "./OrderRefusals.ts"
import {
  type OrderPage,
  type OrderPageQuery,
  type OrderRow,
  Orders,
  type OrderScope,
  placeUnderClaim,
  toOrder
} from "./Orders.ts"
import { traced } from "../observability/spans.ts"

/** The caller, as far as orders go: whose orders it sees, and whether it is staff. */
export interface Caller {
  readonly id: string
  readonly role: "customer" | "staff"
}

/** The order a placement answers with; `replayed` when it is the stored answer to an earlier request with the same Idempotency-Key. */
export interface PlacedOrder {
  readonly order: Order
  readonly replayed: boolean
}

/** A customer sees its own orders, staff every order; another customer's order does not exist for it (404, never 403). */
const scopeOf = (caller: Caller): OrderScope =>
  caller.role === "staff" ? { _tag: "Every" } : { _tag: "Own", apiKeyId: caller.id }

/** Distinct from every createPet hash (a JSON array of three), so a key reused across the two is a mismatch, never a replay. */
const requestHash = (petId: number) => createHash("sha256").update(JSON.stringify(["placeOrder", petId])).digest("hex")

/** The contract's answer to each refusal of `Orders`: the compiler checks every one is answered. */
const answerPlaceRefusals = {
  ...answerPetMissing,
  PetNotOrderable: ({ petId, status }: PetNotOrderable) =>
    Effect.fail(new PetNotAvailable({ message: `Pet ${petId} is ${status}, not available: it cannot be ordered` }))
}

const answerOrderMissing = {
  OrderMissing: ({ orderId }: OrderMissing) => Effect.fail(new NotFound({ message: `No order has id ${orderId}` }))
}

const answerMoveRefusals = (verb: string) => ({
  ...answerOrderMissing,
  OrderNotPlaced: ({ orderId, status }: OrderNotPlaced): Effect.Effect<never, InvalidTransition> =>
    // A placed order always moves; refusing one would be a bug.
    status === "placed"
      ? Effect.die(new Error(`order ${orderId} is placed but did not move`))
      : Effect.fail(
        new InvalidTransition({ message: `Order ${orderId} is ${status}: only a placed order can be ${verb}` })
      )
})

/**
 * What a request does with orders, across tables: who may see and move which
 * order (roles, ownership), placing once per Idempotency-Key, and each
 * refusal as the contract's error. The statements are `Orders`' (and, for a
 * placement with a key, `placeUnderClaim` in `IdempotencyKeys.completeWith`).
 */
export class OrderDesk extends Context.Service<OrderDesk, {
  readonly place: (
    petId: number,
    caller: Caller,
    idempotencyKey: string | undefined
  ) => Effect.Effect<
    PlacedOrder,
    NotFound | PetNotAvailable | IdempotencyKeyInFlight | IdempotencyKeyReused | DatabaseError
  >
  readonly list: (caller: Caller, query: OrderPageQuery) => Effect.Effect<OrderPage, DatabaseError>
  readonly get: (orderId: number, caller: Caller) => Effect.Effect<Order, NotFound | DatabaseError>
  readonly cancel: (
    orderId: number,
    caller: Caller
  ) => Effect.Effect<Order, NotFound | InvalidTransition | DatabaseError>
  readonly deliver: (
    orderId: number,
    caller: Caller
  ) => Effect.Effect<Order, Forbidden | NotFound | InvalidTransition | DatabaseError>
}>()("@petstore/server/orders/OrderDesk") {
  static readonly layer = Layer.effect(
    OrderDesk,
    Effect.gen(function*() {
      const orders = yield* Orders
      const idempotencyKeys = yield* IdempotencyKeys

      const placeOnce = (petId: number, caller: Caller, key: string) =>
        idempotencyKeys.once({ apiKeyId: caller.id, key }, {
          requestHash: requestHash(petId),
          noun: "order",
          complete: Effect.fnUntraced(function*(claim) {
            const outcome = yield* idempotencyKeys.completeWith<OrderRow>(
              claim,
              "order",
              placeUnderClaim(petId, claim.apiKeyId)
            )
            if (outcome._tag === "Created") return Option.some(toOrder(outcome.row))
            if (outcome._tag === "Lost") return Option.none()
            return yield* orders.refusePlacement(petId).pipe(Effect.catchTags(answerPlaceRefusals))
          }),
          // None: the order the key's claim names is not visible yet; `once` answers that as in flight.
          replay: (orderId) =>
            orders.get({ _tag: "Own", apiKeyId: caller.id }, orderId).pipe(
              Effect.map(Option.some),
              Effect.catchTag("OrderMissing", () => Effect.succeedNone)
            )
        }).pipe(Effect.map(({ created, replayed }) => ({ order: created, replayed })))

      return OrderDesk.of({
        place: Effect.fnUntraced(function*(petId, caller, idempotencyKey) {
          if (idempotencyKey !== undefined) return yield* placeOnce(petId, caller, idempotencyKey)
          const order = yield* orders.place(petId, caller.id).pipe(Effect.catchTags(answerPlaceRefusals))
          return { order, replayed: false }
        }, traced("OrderDesk.place")),
        list: (caller, query) => orders.list(scopeOf(caller), query),
        get: (orderId, caller) => orders.get(scopeOf(caller), orderId).pipe(Effect.catchTags(answerOrderMissing)),
        cancel: (orderId, caller) =>
          orders.move(scopeOf(caller), orderId, "cancelled").pipe(
            Effect.catchTags(answerMoveRefusals("cancelled"))
          ),
        deliver: Effect.fnUntraced(function*(orderId, caller) {
          if (caller.role !== "staff") {
            return yield* new Forbidden({ message: "Delivering an order needs a staff API key" })
          }
          return yield* orders.move(scopeOf(caller), orderId, "delivered").pipe(
            Effect.catchTags(answerMoveRefusals("delivered"))
          )
        }, traced("OrderDesk.deliver"))
      })
    })
  )
}
