import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ServiceUnavailable } from "./ApiError.ts"
import { Events, EventType } from "./Event.ts"
import { ApiKeyAuth, RequestValidation } from "./Middleware.ts"
import { describeParameters } from "./OpenApiDocument.ts"
import { DECIMAL_SPELLING, DecimalId } from "./Pet.ts"
import { betaOperation, Stability } from "./Versioning.ts"

export const DEFAULT_EVENT_PAGE_SIZE = 20
export const MAX_EVENT_PAGE_SIZE = 100

export const EventPageSize = DecimalId.check(Schema.isBetween({ minimum: 1, maximum: MAX_EVENT_PAGE_SIZE }, {
  expected: `an integer from 1 to ${MAX_EVENT_PAGE_SIZE}`
})).annotate({ default: DEFAULT_EVENT_PAGE_SIZE })

/** Hexadecimal of each byte of an ASCII text: how the events cursor spells its fixed parts. */
const hexOf = (text: string) =>
  Array.from(text, (character) => character.charCodeAt(0).toString(16).padStart(2, "0")).join("")
const HEX_DIGIT_BYTE = "3[0-9]"
const HEX_NONZERO_DIGIT_BYTE = "3[1-9]"

/**
 * The cursors this version issues, as a pattern: lowercase hexadecimal of
 * `events:<tx>.<seq>`, the last event's position (its transaction id, up to 19
 * digits, and its order of writing, up to 15), each without a leading zero
 * (`encodeEventCursor` in the server). Hexadecimal keeps one byte to two
 * characters, so the pattern says exactly what is issued; the server refuses
 * any other value, except the base64url cursors of earlier versions.
 */
export const EVENT_CURSOR_PATTERN = new RegExp(
  `^${hexOf("events:")}${HEX_NONZERO_DIGIT_BYTE}(?:${HEX_DIGIT_BYTE}){0,18}${hexOf(".")}` +
    `${HEX_NONZERO_DIGIT_BYTE}(?:${HEX_DIGIT_BYTE}){0,14}$`,
  "u"
)

export const ListEventsQuery = Schema.Struct({
  limit: Schema.optionalKey(EventPageSize.annotate({
    description: `Maximum number of events returned, 1–${MAX_EVENT_PAGE_SIZE} (default ${DEFAULT_EVENT_PAGE_SIZE})`
  })),
  type: Schema.optionalKey(EventType),
  cursor: Schema.optionalKey(Schema.String.annotate({
    description: "Opaque position from a previous page's `Link: <…>; rel=\"next\"` header"
  }))
})

/** `limit` and `cursor` described by value in the OpenAPI document, where Effect would show strings. */
const listEventsParameters = describeParameters({
  limit: {
    value: Schema.toType(EventPageSize),
    description: `Maximum number of events returned, 1–${MAX_EVENT_PAGE_SIZE} (default ${DEFAULT_EVENT_PAGE_SIZE}). ` +
      `${DECIMAL_SPELLING}.`
  },
  cursor: {
    value: Schema.String.check(Schema.isPattern(EVENT_CURSOR_PATTERN)),
    description: "Where the page starts: copy it from the previous page's `Link: <…>; rel=\"next\"` URL, or keep " +
      "the one that led to the last page to read on later. Leave it out for the first page. Treat it as opaque: the " +
      "pattern shows the cursors this version issues, so that schema-driven tools can make valid ones; any other " +
      "value is 400.",
    offByDefault: {
      summary: "A cursor from a Link header (leave it out for the first page)",
      value: "6576656e74733a3734312e3132"
    }
  }
})

const listEvents = HttpApiEndpoint.get("listEvents", "/events", {
  query: ListEventsQuery,
  success: HttpApiSchema.WithHeaders(Events, {
    link: Schema.optionalKey(Schema.String.annotate({
      description: "`<url>; rel=\"next\"` on every page: after its last event, or on an empty page (the end of " +
        "the log for now) the same query again, so a poller follows it whether or not more events follow yet",
      examples: ["<https://pets.example.com/v1/events?limit=20&cursor=6576656e74733a3734312e3132>; rel=\"next\""]
    }))
  }),
  error: ServiceUnavailable
}).annotate(Stability, "beta").annotateMerge(betaOperation({
  identifier: "listEvents",
  summary: "List events",
  description: "The caller's events, oldest first, a page at a time (keyset pagination through the `Link` header, " +
    "as `GET /pets`): every pet event, the caller's own order events (a staff key: every order's). " +
    "Kept 30 days. An event is listed once every transaction that began before it has ended, so a cursor never " +
    "skips an event that commits late.",
  transform: listEventsParameters
}))

export class EventsGroup extends HttpApiGroup.make("events")
  .add(listEvents)
  .middleware(RequestValidation)
  .middleware(ApiKeyAuth)
  .annotate(OpenApi.Description, "What happened to pets and orders, as a log to read or webhooks to receive (beta)")
{}
