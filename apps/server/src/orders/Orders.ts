import type { Order, OrderStatus, PetStatus } from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { Database } from "../db/Database.ts"
import type { DatabaseError } from "../db/DatabaseError.ts"
import { type Statement, sql } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"
import { PetMissing } from "../pets/PetRefusals.ts"
import { OrderMissing, OrderNotPlaced, PetNotOrderable } from "./OrderRefusals.ts"

/** A row of the orders table as its statements return it. */
export interface OrderRow {
  readonly id: number
  readonly pet_id: number
  readonly status: OrderStatus
  readonly placed_at: Date | string
  readonly updated_at: Date | string
}

export const toOrder = (row: OrderRow): Order => ({
  id: Number(row.id),
  petId: Number(row.pet_id),
  status: row.status,
  placedAt: new Date(row.placed_at).toISOString(),
  updatedAt: new Date(row.updated_at).toISOString()
})

/** Whose orders a statement may see: one key's, or (a staff key) everyone's. */
export type OrderScope = { readonly _tag: "Own"; readonly apiKeyId: string } | { readonly _tag: "Every" }

export interface OrderPageQuery {
  readonly limit: number
  readonly status: OrderStatus | undefined
  readonly after: number
}

export interface OrderPage {
  readonly orders: ReadonlyArray<Order>
  readonly nextAfter: Option.Option<number>
}

/** Why an order was not placed: the pet does not exist, or is not `available` (its status now). */
export type PlaceRefusal = PetMissing | PetNotOrderable

/** Why an order did not move: no such order in scope, or it is not `placed` (its status now). */
export type MoveRefusal = OrderMissing | OrderNotPlaced

/** Where each move takes an order, and its pet. */
const moves = {
  cancelled: "available",
  delivered: "sold"
} as const satisfies Record<Exclude<OrderStatus, "placed">, PetStatus>

/**
 * A page's statement, one per kind of page, each walking the index that serves it: every order by id, one
 * status by (status, id), a customer's orders by (api_key_id, id), its status filtered on the way. With the
 * scope and the status as parameters of one statement (`$every OR api_key_id = $key`, `$status IS NULL OR
 * status = $status`), the plan PostgreSQL settled on for the prepared statement served every kind: after a
 * staff key's pages it walked the primary key for a customer too, throwing away every other key's orders, and
 * `status=placed` threw away every closed order before the first open one (bench --growth). The bounds are
 * row comparisons for the reason `Pets.list`'s are: with an equality the planner may walk the primary key.
 */
const pageStatement = (scope: OrderScope, query: OrderPageQuery): Statement => {
  const take = query.limit + 1
  if (scope._tag === "Own") {
    return query.status === undefined
      ? sql`SELECT id, pet_id, status, placed_at, updated_at FROM orders
          WHERE (api_key_id, id) > (${scope.apiKeyId}::text, ${query.after}::bigint) AND api_key_id <= ${scope.apiKeyId}::text
          ORDER BY api_key_id, id LIMIT ${take}::integer`
      : sql`SELECT id, pet_id, status, placed_at, updated_at FROM orders
          WHERE (api_key_id, id) > (${scope.apiKeyId}::text, ${query.after}::bigint) AND api_key_id <= ${scope.apiKeyId}::text
            AND status = ${query.status}::text
          ORDER BY api_key_id, id LIMIT ${take}::integer`
  }
  return query.status === undefined
    ? sql`SELECT id, pet_id, status, placed_at, updated_at FROM orders
        WHERE id > ${query.after}::bigint ORDER BY id LIMIT ${take}::integer`
    : sql`SELECT id, pet_id, status, placed_at, updated_at FROM orders
        WHERE (status, id) > (${query.status}::text, ${query.after}::bigint) AND status <= ${query.status}::text
        ORDER BY status, id LIMIT ${take}::integer`
}

const everyKey = (scope: OrderScope) => scope._tag === "Every"
const keyOf = (scope: OrderScope) => scope._tag === "Own" ? scope.apiKeyId : ""

/**
 * The placement of an order with an Idempotency-Key, as `IdempotencyKeys.completeWith` runs it in one statement with
 * the key's completion: the same statements as `place`, if the claim is still held.
 */
export const placeUnderClaim = (petId: number, apiKeyId: string): Statement =>
  sql`pet AS (
            UPDATE pets SET status = 'pending', version = version + 1
            WHERE id = ${petId}::bigint AND status = 'available' AND EXISTS (SELECT 1 FROM claim_held)
            RETURNING id
          ), created AS (
            INSERT INTO orders (pet_id, open_pet_id, api_key_id, status)
            SELECT id, id, ${apiKeyId}, 'placed' FROM pet
            RETURNING id, pet_id, status, placed_at, updated_at
          )`

/**
 * The orders table: all of its SQL is here (a placement with an
 * Idempotency-Key runs `placeUnderClaim` in the key's statement).
 *
 * An order and its pet move together, each move one statement, so no crash or
 * interleaving leaves them disagreeing. Those statements also write the pets
 * table (its status and version only): they live here because what makes them
 * correct is this table's protocol, `open_pet_id` (see the migration). Every
 * statement that takes locks on both takes the pet's first (placing updates it,
 * moving locks it `FOR UPDATE` before touching the order, deleting a pet
 * deletes it), so none waits on another in a cycle.
 */
export class Orders extends Context.Service<Orders, {
  /** Places an order for an available pet, which becomes `pending` in the same statement. */
  readonly place: (petId: number, apiKeyId: string) => Effect.Effect<Order, PlaceRefusal | DatabaseError>
  /** Fails with why a placement of this pet was refused, as things stand now. */
  readonly refusePlacement: (petId: number) => Effect.Effect<never, PlaceRefusal | DatabaseError>
  readonly list: (scope: OrderScope, query: OrderPageQuery) => Effect.Effect<OrderPage, DatabaseError>
  readonly get: (scope: OrderScope, id: number) => Effect.Effect<Order, OrderMissing | DatabaseError>
  /** Moves a `placed` order to `to`, and its pet with it (`cancelled`: available, `delivered`: sold). */
  readonly move: (
    scope: OrderScope,
    id: number,
    to: keyof typeof moves
  ) => Effect.Effect<Order, MoveRefusal | DatabaseError>
}>()("@petstore/server/orders/Orders") {
  static readonly layer = Layer.effect(
    Orders,
    Effect.gen(function*() {
      const db = yield* Database

      // Read after the statement, in a snapshot of its own: the state that refused it, not the one it started from.
      const refusePlacement = (petId: number) =>
        db.query<{ readonly status: PetStatus }>(sql`SELECT status FROM pets WHERE id = ${petId}::bigint`).pipe(
          Effect.flatMap(([row]) =>
            Effect.fail<PlaceRefusal>(
              row === undefined ? new PetMissing({ petId }) : new PetNotOrderable({ petId, status: row.status })
            )
          )
        )

      // Concurrent placements for one pet queue on its row lock; each re-reads the row once it is its turn, finds it
      // pending, and places nothing. The unique open_pet_id would refuse a second open order anyway.
      const place = Effect.fnUntraced(function*(petId: number, apiKeyId: string) {
        const [row] = yield* db.query<OrderRow>(sql`
          WITH pet AS (
            UPDATE pets SET status = 'pending', version = version + 1
            WHERE id = ${petId}::bigint AND status = 'available'
            RETURNING id
          )
          INSERT INTO orders (pet_id, open_pet_id, api_key_id, status)
          SELECT id, id, ${apiKeyId}, 'placed' FROM pet
          RETURNING id, pet_id, status, placed_at, updated_at`)
        if (row !== undefined) return toOrder(row)
        return yield* refusePlacement(petId)
      }, traced("Orders.place"))

      const list = Effect.fnUntraced(function*(scope: OrderScope, query: OrderPageQuery) {
        const rows = yield* db.query<OrderRow>(pageStatement(scope, query))
        const shown = rows.slice(0, query.limit).map(toOrder)
        return {
          orders: shown,
          nextAfter: rows.length > query.limit ? Option.some(shown.at(-1)!.id) : Option.none()
        } satisfies OrderPage
      }, traced("Orders.list"))

      const get = (scope: OrderScope, id: number) =>
        db.query<OrderRow>(sql`
          SELECT id, pet_id, status, placed_at, updated_at FROM orders
          WHERE id = ${id}::bigint AND (${everyKey(scope)}::boolean OR api_key_id = ${keyOf(scope)})`).pipe(
          Effect.flatMap(([row]) =>
            row === undefined ? Effect.fail(new OrderMissing({ orderId: id })) : Effect.succeed(toOrder(row))
          )
        )

      const move = Effect.fnUntraced(function*(scope: OrderScope, id: number, to: keyof typeof moves) {
        const [row] = yield* db.query<OrderRow>(sql`
          WITH pet AS (
            SELECT p.id FROM orders AS o JOIN pets AS p ON p.id = o.open_pet_id
            WHERE o.id = ${id}::bigint AND (${everyKey(scope)}::boolean OR o.api_key_id = ${keyOf(scope)})
            FOR UPDATE OF p
          ), moved AS (
            UPDATE orders SET status = ${to}::text, open_pet_id = NULL, updated_at = now()
            WHERE id = ${id}::bigint AND status = 'placed' AND EXISTS (SELECT 1 FROM pet)
            RETURNING id, pet_id, status, placed_at, updated_at
          ), pet_moved AS (
            UPDATE pets SET status = ${moves[to]}::text, version = pets.version + 1
            FROM moved WHERE pets.id = moved.pet_id
          )
          SELECT * FROM moved`)
        if (row !== undefined) return toOrder(row)
        // Not moved: missing (in the caller's scope), or no longer placed.
        const now = yield* get(scope, id)
        return yield* new OrderNotPlaced({ orderId: id, status: now.status })
      }, traced("Orders.move"))

      return Orders.of({ place, refusePlacement, list, get, move })
    })
  )
}
