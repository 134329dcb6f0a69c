/**
 * The statements the server sends for one request, taken from its own modules
 * rather than copied: a service runs against a Database that records what it
 * is asked to run and answers no rows. growth.ts explains them, so a change to
 * the server's SQL is what the growth table reads, with no copy to fall behind.
 */
import { Database } from "@petstore/server/db/Database"
import { Orders, type OrderScope } from "@petstore/server/orders/Orders"
import { Pets } from "@petstore/server/pets/Pets"
import { Effect, Layer } from "effect"

export interface Statement {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

/** The first statement `use` sends (a refused or empty outcome is expected: every query answers no rows). */
const firstStatement = async <A, E>(use: Effect.Effect<A, E, Pets | Orders>): Promise<Statement> => {
  const sent: Array<Statement> = []
  const recording = Layer.succeed(
    Database,
    Database.of({
      kind: "postgres",
      query: <Row>(statement: Statement) => Effect.sync(() => (sent.push(statement), [] as ReadonlyArray<Row>)),
      listen: () => Effect.void
    })
  )
  const services = Layer.mergeAll(Pets.layer, Orders.layer).pipe(Layer.provide(recording))
  await Effect.runPromiseExit(use.pipe(Effect.provide(services)))
  if (sent[0] === undefined) throw new Error("the service sent no statement")
  return sent[0]
}

/** `GET /v1/pets?limit=…[&status=…][&cursor=…]`, alone in its batch. */
export const listPets = (limit: number, status: "available" | "pending" | "sold" | undefined, after: number) =>
  firstStatement(Pets.use((pets) => pets.list({ limit, status, after })))

/** `GET /v1/pets/{id}`, alone in its batch. */
export const getPet = (id: number) => firstStatement(Pets.use((pets) => pets.get(id)))

/** `GET /v1/store/orders?limit=…[&status=…][&cursor=…]` of a customer key (`Own`) or a staff key (`Every`). */
export const listOrders = (
  scope: OrderScope,
  limit: number,
  status: "placed" | "delivered" | "cancelled" | undefined,
  after: number
) => firstStatement(Orders.use((orders) => orders.list(scope, { limit, status, after })))

/** `GET /v1/store/orders/{id}`. */
export const getOrder = (scope: OrderScope, id: number) => firstStatement(Orders.use((orders) => orders.get(scope, id)))

/** `POST /v1/store/orders {petId}` without an Idempotency-Key: the pet made pending and the order placed, one statement. */
export const placeOrder = (petId: number, apiKeyId: string) =>
  firstStatement(Orders.use((orders) => orders.place(petId, apiKeyId)))
