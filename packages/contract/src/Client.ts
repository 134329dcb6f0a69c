import { Context, Effect, Layer, Option, type Redacted, Schema, Stream } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { AdminApi } from "./AdminApi.ts"
import type { Event } from "./Event.ts"
import type { ListEventsQuery } from "./EventsApi.ts"
import { NewOrder, type Order, type OrderId } from "./Order.ts"
import { NewPet, type Pet, type PetId, PetPatch } from "./Pet.ts"
import { PetstoreApi } from "./PetstoreApi.ts"
import type { ListPetsQuery } from "./PetsApi.ts"
import type { ListOrdersQuery } from "./StoreApi.ts"
import { NewWebhookEndpoint, WebhookEndpointPatch } from "./WebhookEndpoints.ts"

/** The contract's paths carry `/v1` already, so a base URL that ends in it is taken back to its origin. */
const originOf = (baseUrl: string) => baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

const withBearer = (token: string | Redacted.Redacted<string>) => (client: HttpClient.HttpClient) =>
  client.pipe(HttpClient.mapRequest(HttpClientRequest.bearerToken(token)))

/** `GET /v1/pets`'s query: every field optional (`limit` defaults to 20 on the server). */
export type ListPetsOptions = typeof ListPetsQuery.Type

/** A new pet as a plain object; `status` may be left out (the server stores `available`). */
export type NewPetInput = typeof NewPet.Encoded

/** One page of `GET /v1/pets`, and the cursor of the next one when more pets follow. */
export interface PetPage {
  readonly pets: ReadonlyArray<Pet>
  readonly next: Option.Option<string>
}

/** `GET /v1/store/orders`'s query: every field optional (`limit` defaults to 20 on the server). */
export type ListOrdersOptions = typeof ListOrdersQuery.Type

/** One page of `GET /v1/store/orders`, and the cursor of the next one when more orders follow. */
export interface OrderPage {
  readonly orders: ReadonlyArray<Order>
  readonly next: Option.Option<string>
}

/** `GET /v1/events`'s query: every field optional (`limit` defaults to 20 on the server). */
export type ListEventsOptions = typeof ListEventsQuery.Type

/**
 * One page of `GET /v1/events`, and the cursor to read on from: after its last event, or on an empty page
 * the same cursor again (none while the log has been empty from its start).
 */
export interface EventPage {
  readonly events: ReadonlyArray<Event>
  readonly next: Option.Option<string>
}

/** The fields of a pet to change, as a plain object. */
export type PetPatchInput = typeof PetPatch.Encoded

/**
 * The `cursor` of a `Link: <…>; rel="next"` header. The URL is not followed as
 * it is: it names the server as it sees itself (`PUBLIC_BASE_URL`), the client
 * keeps talking to the address it was given.
 */
export const nextCursor = (link: string | undefined): Option.Option<string> => {
  const target = link?.split(",").map((part) => /^\s*<([^>]*)>\s*;\s*rel="?next"?\s*$/i.exec(part)?.[1]).find(
    (url) => url !== undefined
  )
  if (target === undefined) return Option.none()
  return Option.fromNullishOr(URL.parse(target, "http://base.invalid")?.searchParams.get("cursor"))
}

/**
 * A typed client of the public API. `baseUrl` is the service's address, with
 * or without the trailing `/v1`. Needs an `HttpClient` (e.g. `FetchHttpClient.layer`).
 *
 * Inputs are plain objects, checked against the contract before anything is
 * sent; answers are decoded, and every error the service documents fails with
 * its contract class (`NotFound`, `RateLimited`, …).
 */
export const makePetstoreClient = Effect.fnUntraced(function*(options: {
  readonly baseUrl: string
  readonly apiKey: string | Redacted.Redacted<string>
}) {
  const api = yield* HttpApiClient.make(PetstoreApi, {
    baseUrl: originOf(options.baseUrl),
    transformClient: withBearer(options.apiKey)
  })

  const listPets = Effect.fn("PetstoreClient.listPets")(function*(query: ListPetsOptions = {}) {
    const { body, headers } = yield* api.pets.listPets({ query })
    const page: PetPage = { pets: body, next: nextCursor(headers.link) }
    return page
  })

  const listOrders = Effect.fn("PetstoreClient.listOrders")(function*(query: ListOrdersOptions = {}) {
    const { body, headers } = yield* api.store.listOrders({ query })
    const page: OrderPage = { orders: body, next: nextCursor(headers.link) }
    return page
  })

  const listEvents = Effect.fn("PetstoreClient.listEvents")(function*(query: ListEventsOptions = {}) {
    const { body, headers } = yield* api.events.listEvents({ query })
    const page: EventPage = { events: body, next: nextCursor(headers.link) }
    return page
  })

  return {
    /** Beta. One page of the caller's events, oldest first; `next` continues after it. */
    listEvents,

    /** Beta. Every event the query matches, page after page, up to the end of the log (its first empty page). */
    allEvents: (query: Omit<ListEventsOptions, "cursor"> = {}) =>
      Stream.paginate(
        undefined as string | undefined,
        (cursor) =>
          listEvents(cursor === undefined ? query : { ...query, cursor }).pipe(
            Effect.map((page) => [page.events, page.events.length === 0 ? Option.none() : page.next] as const)
          )
      ),

    /** Beta. Registers a webhook endpoint; the answer's `secret` is shown this once. */
    createWebhookEndpoint: Effect.fn("PetstoreClient.createWebhookEndpoint")(function*(
      endpoint: typeof NewWebhookEndpoint.Encoded
    ) {
      const payload = yield* Schema.decodeEffect(NewWebhookEndpoint)(endpoint)
      return yield* api.webhooks.createWebhookEndpoint({ payload })
    }),

    /** Beta. The caller's webhook endpoints. */
    listWebhookEndpoints: Effect.fn("PetstoreClient.listWebhookEndpoints")(function*() {
      return yield* api.webhooks.listWebhookEndpoints()
    }),

    /** Beta. One of the caller's webhook endpoints. */
    getWebhookEndpoint: Effect.fn("PetstoreClient.getWebhookEndpoint")(function*(endpointId: string) {
      return yield* api.webhooks.getWebhookEndpoint({ params: { endpointId } })
    }),

    /** Beta. Changes a webhook endpoint; `{ enabled: false }` disables it, `{ enabled: true }` enables it. */
    updateWebhookEndpoint: Effect.fn("PetstoreClient.updateWebhookEndpoint")(function*(
      endpointId: string,
      patch: typeof WebhookEndpointPatch.Encoded
    ) {
      const payload = yield* Schema.decodeEffect(WebhookEndpointPatch)(patch)
      return yield* api.webhooks.updateWebhookEndpoint({ params: { endpointId }, payload })
    }),

    /** Beta. Deletes a webhook endpoint. */
    deleteWebhookEndpoint: Effect.fn("PetstoreClient.deleteWebhookEndpoint")(function*(endpointId: string) {
      yield* api.webhooks.deleteWebhookEndpoint({ params: { endpointId } })
    }),

    /** Beta. A new signing secret; the old one keeps signing too for 24 hours. */
    rotateWebhookSecret: Effect.fn("PetstoreClient.rotateWebhookSecret")(function*(endpointId: string) {
      return yield* api.webhooks.rotateWebhookSecret({ params: { endpointId } })
    }),

    /** Beta. Queues a `webhook.test` event for the endpoint. */
    testWebhookEndpoint: Effect.fn("PetstoreClient.testWebhookEndpoint")(function*(endpointId: string) {
      return yield* api.webhooks.testWebhookEndpoint({ params: { endpointId } })
    }),

    /** Beta. The endpoint's latest delivery attempts, newest first. */
    listWebhookAttempts: Effect.fn("PetstoreClient.listWebhookAttempts")(function*(endpointId: string) {
      return yield* api.webhooks.listWebhookAttempts({ params: { endpointId } })
    }),

    /** Beta. Queues one of the caller's events for the endpoint again, with the same `webhook-id`. */
    redeliverWebhookEvent: Effect.fn("PetstoreClient.redeliverWebhookEvent")(
      function*(endpointId: string, eventId: string) {
        return yield* api.webhooks.redeliverWebhookEvent({ params: { endpointId }, payload: { eventId } })
      }
    ),

    /** One page of pets in ascending id order; `next` continues after it. */
    listPets,

    /** Every pet the query matches, page after page, following `Link: <…>; rel="next"`. */
    allPets: (query: Omit<ListPetsOptions, "cursor"> = {}) =>
      Stream.paginate(
        undefined as string | undefined,
        (cursor) =>
          listPets(cursor === undefined ? query : { ...query, cursor }).pipe(
            Effect.map((page) => [page.pets, page.next] as const)
          )
      ),

    /**
     * Creates a pet. With `idempotencyKey`, a retry of the same create returns
     * the pet made the first time instead of a second one.
     */
    createPet: Effect.fn("PetstoreClient.createPet")(function*(
      pet: NewPetInput,
      options: { readonly idempotencyKey?: string } = {}
    ) {
      const payload = yield* Schema.decodeEffect(NewPet)(pet)
      const headers = options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }
      return (yield* api.pets.createPet({ payload, headers })).body
    }),

    /** @deprecated The service removes `GET /v1/pets/{petId}` on 2030-12-05: use `listPets`. */
    getPet: Effect.fn("PetstoreClient.getPet")(function*(petId: PetId) {
      return (yield* api.pets.getPet({ params: { petId } })).body
    }),

    /**
     * Beta. Changes a pet's `name` and/or `categoryId`. With `ifMatch` (an
     * `etag` this returned before), only if the pet is still that version:
     * else it fails with `PreconditionFailed`.
     */
    updatePet: Effect.fn("PetstoreClient.updatePet")(function*(
      petId: PetId,
      patch: PetPatchInput,
      options: { readonly ifMatch?: string } = {}
    ) {
      const payload = yield* Schema.decodeEffect(PetPatch)(patch)
      const headers = options.ifMatch === undefined ? {} : { "if-match": options.ifMatch }
      const { body, headers: answered } = yield* api.pets.updatePet({ params: { petId }, payload, headers })
      return { pet: body, etag: answered.etag }
    }),

    /** Beta, staff keys only. Deletes a pet that has no open order; with `ifMatch`, only that version of it. */
    deletePet: Effect.fn("PetstoreClient.deletePet")(
      function*(petId: PetId, options: { readonly ifMatch?: string } = {}) {
        const headers = options.ifMatch === undefined ? {} : { "if-match": options.ifMatch }
        yield* api.pets.deletePet({ params: { petId }, headers })
      }
    ),

    /**
     * Beta. Orders an `available` pet, which becomes `pending`. With
     * `idempotencyKey`, a retry returns the order placed the first time.
     */
    placeOrder: Effect.fn("PetstoreClient.placeOrder")(function*(
      order: typeof NewOrder.Encoded,
      options: { readonly idempotencyKey?: string } = {}
    ) {
      const payload = yield* Schema.decodeEffect(NewOrder)(order)
      const headers = options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }
      return (yield* api.store.placeOrder({ payload, headers })).body
    }),

    /** Beta. One page of the caller's orders (a staff key's: every order) in ascending id order. */
    listOrders,

    /** Beta. Every order the query matches, page after page. */
    allOrders: (query: Omit<ListOrdersOptions, "cursor"> = {}) =>
      Stream.paginate(
        undefined as string | undefined,
        (cursor) =>
          listOrders(cursor === undefined ? query : { ...query, cursor }).pipe(
            Effect.map((page) => [page.orders, page.next] as const)
          )
      ),

    /** Beta. One order of the caller (a staff key: any order). */
    getOrder: Effect.fn("PetstoreClient.getOrder")(function*(orderId: OrderId) {
      return yield* api.store.getOrder({ params: { orderId } })
    }),

    /** Beta. Cancels a placed order; its pet is available again. */
    cancelOrder: Effect.fn("PetstoreClient.cancelOrder")(function*(orderId: OrderId) {
      return yield* api.store.cancelOrder({ params: { orderId } })
    }),

    /** Beta, staff keys only. Delivers a placed order; its pet is sold. */
    deliverOrder: Effect.fn("PetstoreClient.deliverOrder")(function*(orderId: OrderId) {
      return yield* api.store.deliverOrder({ params: { orderId } })
    }),

    /** The calling key's quotas and any ban; costs no quota. */
    rateLimit: Effect.fn("PetstoreClient.rateLimit")(function*() {
      return yield* api.account.rateLimit()
    })
  }
})

/** The public API's client as a service: `PetstoreClient.layer({ baseUrl, apiKey })`. */
export class PetstoreClient extends Context.Service<
  PetstoreClient,
  Effect.Success<ReturnType<typeof makePetstoreClient>>
>()("@petstore/contract/PetstoreClient") {
  static readonly layer = (options: Parameters<typeof makePetstoreClient>[0]) =>
    Layer.effect(PetstoreClient, makePetstoreClient(options))
}

/** A typed client of the admin API, as used by `pnpm keys`. */
export const makeAdminClient = (options: { readonly baseUrl: string; readonly adminToken: string }) =>
  HttpApiClient.make(AdminApi, {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    transformClient: withBearer(options.adminToken)
  })

export type AdminClient = Effect.Success<ReturnType<typeof makeAdminClient>>
