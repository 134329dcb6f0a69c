import { describe, expect, it } from "vitest"
import { nextLink } from "../lib/api.js"
import {
  advance,
  firstSighting,
  newCursor,
  setupData,
  startFromSetup,
  typeWalkStart,
  walkStart
} from "../lib/paging.js"

/** What a VU receives of setup's return: k6 serialises it through JSON (undefined fields go, null stays). */
const throughK6 = (data: unknown): unknown => JSON.parse(JSON.stringify(data))

const LINK = "http://localhost:8080/v1/events?limit=100&cursor=abc_DEF-123"

describe("events.js's walks, from setup's data as k6 hands it to the VUs", () => {
  it("a log that fits on one page: setup hands over null, and the walks start at the first page", () => {
    const data = throughK6(setupData(undefined))
    expect(data).toEqual({ start: null })
    const start = startFromSetup(data)
    expect(start).toBeUndefined()
    expect(walkStart(start, 100)).toBe("/events?limit=100")
    expect(typeWalkStart(start, 100, "order.cancelled")).toBe("/events?limit=100&type=order.cancelled")
  })

  it("a setup that returned { start: undefined } (missing after JSON) or null never becomes a path", () => {
    for (const data of [throughK6({ start: undefined }), { start: null }, null, undefined, {}, { start: "" }]) {
      const start = startFromSetup(data)
      expect(start).toBeUndefined()
      const cursor = newCursor(start)
      expect(cursor.resume).toBeUndefined()
      expect(walkStart(cursor.resume, 50)).toBe("/events?limit=50")
      // The bug this guards: `${null}&type=…` asked for GET /v1null&type=order.cancelled.
      expect(typeWalkStart(null, 50, "order.cancelled")).toBe("/events?limit=50&type=order.cancelled")
      expect(typeWalkStart(cursor.resume, 50, "pet.updated")).not.toMatch(/null|undefined/)
    }
  })

  it("a longer log: the walks start at the last Link setup was given, and the walk by type continues it", () => {
    const data = throughK6(setupData(LINK))
    expect(data).toEqual({ start: LINK })
    const cursor = newCursor(startFromSetup(data))
    expect(walkStart(cursor.resume, 100)).toBe(LINK)
    expect(typeWalkStart(cursor.resume, 100, "order.delivered")).toBe(`${LINK}&type=order.delivered`)
  })

  it("a walk moves its resume point to each next page, and stops at the page without a Link", () => {
    const cursor = newCursor(undefined)
    expect(firstSighting(cursor, "evt_1")).toBe(true)
    expect(firstSighting(cursor, "evt_1")).toBe(false)
    expect(advance(cursor, LINK)).toBe(LINK)
    expect(cursor).toEqual({ resume: LINK, sinceResume: {} })
    // The last page: no next; the resume point stays, and the ids seen on it are kept for the next walk.
    expect(firstSighting(cursor, "evt_2")).toBe(true)
    expect(advance(cursor, undefined)).toBeUndefined()
    expect(cursor.resume).toBe(LINK)
    expect(firstSighting(cursor, "evt_2")).toBe(false)
  })

  it("the next page is read from the Link header as k6 gives it", () => {
    const response = (link: string | undefined) =>
      ({ headers: link === undefined ? {} : { Link: link } }) as unknown as Parameters<typeof nextLink>[0]
    expect(nextLink(response(`<${LINK}>; rel="next"`))).toBe(LINK)
    expect(nextLink(response(`</v1/pets/1>; rel="successor-version", <${LINK}>; rel=next`))).toBe(LINK)
    expect(nextLink(response(`</v1/pets/1>; rel="successor-version"`))).toBeUndefined()
    expect(nextLink(response(undefined))).toBeUndefined()
  })
})
