import { Schema } from "effect"
import { Order } from "./Order.ts"
import { Pet } from "./Pet.ts"

export const EventId = Schema.String.check(Schema.isPattern(/^evt_[0-9a-f]{32}$/u)).annotate({
  description: "Unique identifier of the event; also the `webhook-id` of its deliveries, the same on every retry",
  examples: ["evt_2f6c0e1b9a8d4c7e8f1a2b3c4d5e6f70"]
})

const EventTimestamp = Schema.String.annotate({
  format: "date-time",
  description: "When the change was made: the time of its transaction (ISO 8601, UTC)",
  examples: ["2026-11-25T09:30:00.000Z"]
})

export const PetEventType = Schema.Literals(["pet.created", "pet.updated", "pet.deleted"])
export const OrderEventType = Schema.Literals(["order.placed", "order.cancelled", "order.delivered"])

export const PetEvent = Schema.Struct({
  id: EventId,
  type: PetEventType,
  timestamp: EventTimestamp,
  data: Pet
}).annotate({
  identifier: "PetEvent",
  description:
    "A pet was created, changed (its name, category or status) or deleted. `data` is the pet after the change; " +
    "for `pet.deleted`, as it was when deleted. Every key sees pet events."
})
export type PetEvent = typeof PetEvent.Type

export const OrderEvent = Schema.Struct({
  id: EventId,
  type: OrderEventType,
  timestamp: EventTimestamp,
  data: Order
}).annotate({
  identifier: "OrderEvent",
  description: "An order was placed, cancelled or delivered. `data` is the order after the change. " +
    "Seen by the key that placed the order, and by staff keys."
})
export type OrderEvent = typeof OrderEvent.Type

export const WebhookTestEvent = Schema.Struct({
  id: EventId,
  type: Schema.Literal("webhook.test"),
  timestamp: EventTimestamp,
  data: Schema.Struct({
    endpointId: Schema.String.annotate({
      description: "The endpoint the test was sent to",
      examples: ["ep_0c5b2f1e9d8a4b7c6e5f4a3b2c1d0e9f"]
    }),
    message: Schema.String.annotate({ examples: ["A test event, sent on request"] })
  })
}).annotate({
  identifier: "WebhookTestEvent",
  description: "Sent on request to one endpoint (`POST /webhooks/endpoints/{endpointId}/test`); seen by its key alone"
})
export type WebhookTestEvent = typeof WebhookTestEvent.Type

export const Event = Schema.Union([PetEvent, OrderEvent, WebhookTestEvent]).annotate({
  identifier: "Event",
  description: "Something that happened: the body of `GET /events` items and of every webhook delivery"
})
export type Event = typeof Event.Type

export const EventType = Schema.Literals([
  "pet.created",
  "pet.updated",
  "pet.deleted",
  "order.placed",
  "order.cancelled",
  "order.delivered",
  "webhook.test"
]).annotate({ identifier: "EventType", description: "The kind of event" })
export type EventType = typeof EventType.Type

export const Events = Schema.Array(Event).annotate({
  identifier: "Events",
  description: "A page of events, oldest first"
})
