import { describe, expect, it } from "vitest"
import { nextLink } from "../lib/api.js"
import {
  linksOnAsPromised,
  parameter,
  queryParameters,
  readOn,
  sameQuery,
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
      expect(walkStart(start, 50)).toBe("/events?limit=50")
      // The bug this guards: `${null}&type=…` asked for GET /v1null&type=order.cancelled.
      expect(typeWalkStart(null, 50, "order.cancelled")).toBe("/events?limit=50&type=order.cancelled")
      expect(typeWalkStart(start, 50, "pet.updated")).not.toMatch(/null|undefined/)
    }
  })

  it("a longer log: the walks start at the last Link setup was given, and the walk by type continues it", () => {
    const data = throughK6(setupData(LINK))
    expect(data).toEqual({ start: LINK })
    const start = startFromSetup(data)
    expect(walkStart(start, 100)).toBe(LINK)
    expect(typeWalkStart(start, 100, "order.delivered")).toBe(`${LINK}&type=order.delivered`)
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

const base = "http://127.0.0.1:8080/v1"

describe("lib/paging.js", () => {
  it("reads a query's parameters in any order, without the fragment", () => {
    expect(queryParameters(`${base}/events?type=pet.created&limit=5#x`)).toEqual(["limit=5", "type=pet.created"])
    expect(queryParameters("/events")).toEqual([])
    expect(parameter("/events?limit=5&cursor=abc", "cursor")).toBe("abc")
    expect(parameter("/events?limit=5", "cursor")).toBeUndefined()
  })

  it("a relative and an absolute URL of the same query are the same page; another cursor is not", () => {
    expect(sameQuery("/events?limit=5&cursor=abc", `${base}/events?cursor=abc&limit=5`)).toBe(true)
    expect(sameQuery("/events?limit=5&cursor=abc", `${base}/events?limit=5&cursor=abd`)).toBe(false)
    expect(sameQuery("/events?limit=5", `${base}/events?limit=5&cursor=abc`)).toBe(false)
  })

  it("follows the link; a page shorter than the limit is the end for now; no link is no way on", () => {
    expect(readOn(5, 5, `${base}/events?limit=5&cursor=b`)).toEqual({
      url: `${base}/events?limit=5&cursor=b`,
      atEnd: false
    })
    expect(readOn(2, 5, `${base}/events?limit=5&cursor=b`)?.atEnd).toBe(true)
    expect(readOn(0, 5, `${base}/events?limit=5&cursor=a`)?.atEnd).toBe(true)
    expect(readOn(5, 5, undefined)).toBeUndefined()
  })

  it("holds a link to the service's promise: same limit and type, a new cursor after events, itself when empty", () => {
    const url = "/events?limit=5&type=pet.created&cursor=a"
    expect(linksOnAsPromised(url, 3, `${base}/events?limit=5&type=pet.created&cursor=b`)).toBe(true)
    expect(linksOnAsPromised(url, 0, `${base}/events?limit=5&type=pet.created&cursor=a`)).toBe(true)
    // At the start of an empty log there is no position yet: the same query, without a cursor.
    expect(linksOnAsPromised("/events?limit=5", 0, `${base}/events?limit=5`)).toBe(true)
    expect(linksOnAsPromised(url, 3, `${base}/events?limit=5&type=pet.created&cursor=a`)).toBe(false)
    expect(linksOnAsPromised(url, 0, `${base}/events?limit=5&type=pet.created&cursor=b`)).toBe(false)
    expect(linksOnAsPromised(url, 3, `${base}/events?limit=5&cursor=b`)).toBe(false)
    expect(linksOnAsPromised(url, 3, `${base}/events?limit=9&type=pet.created&cursor=b`)).toBe(false)
    expect(linksOnAsPromised(url, 3, undefined)).toBe(false)
  })
})
