import { CurrentApiKey, DEFAULT_PAGE_SIZE, PetstoreApi } from "@petstore/contract"
import { Effect } from "effect"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"
import { OrderDesk, type PlacedOrder } from "../orders/OrderDesk.ts"
import { withoutDatabaseError } from "./databaseFailures.ts"
import { decodeCursor, pageHeaders } from "./pagination.ts"
import { PublicUrl } from "./PublicUrl.ts"

/** 201 with the order's `Location`, and `Idempotent-Replayed` when it is the stored answer to a retry. */
const placedAnswer = ({ order, replayed }: PlacedOrder) =>
  HttpApiSchema.withHeaders({
    body: order,
    headers: {
      location: `/v1/store/orders/${order.id}`,
      ...(replayed ? { "idempotent-replayed": "true" as const } : {})
    }
  })

/** The store's operations (beta): each calls `OrderDesk` as the calling key. */
export const OrdersHandlers = HttpApiBuilder.group(
  PetstoreApi,
  "store",
  Effect.fn(function*(handlers) {
    const desk = withoutDatabaseError(yield* OrderDesk)
    const publicUrl = yield* PublicUrl

    return handlers
      .handle(
        "placeOrder",
        ({ headers, payload }) =>
          CurrentApiKey.use((key) => desk.place(payload.petId, key, headers["idempotency-key"]))
            .pipe(Effect.map(placedAnswer))
      )
      .handle("listOrders", ({ query, request }) =>
        Effect.gen(function*() {
          const pageQuery = {
            limit: query.limit ?? DEFAULT_PAGE_SIZE,
            status: query.status,
            after: yield* decodeCursor(query.cursor)
          }
          const page = yield* CurrentApiKey.use((key) => desk.list(key, pageQuery))
          return HttpApiSchema.withHeaders({
            body: page.orders,
            headers: pageHeaders(page.nextAfter, pageQuery, (path) => publicUrl.of(request, path), "/v1/store/orders")
          })
        }))
      .handle(
        "getOrder",
        ({ params }) => CurrentApiKey.use((key) => desk.get(params.orderId, key))
      )
      .handle(
        "cancelOrder",
        ({ params }) => CurrentApiKey.use((key) => desk.cancel(params.orderId, key))
      )
      .handle(
        "deliverOrder",
        ({ params }) => CurrentApiKey.use((key) => desk.deliver(params.orderId, key))
      )
  })
)
