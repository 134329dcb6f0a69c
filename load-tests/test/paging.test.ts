import { describe, expect, it } from "vitest"
import { linksOnAsPromised, parameter, queryParameters, readOn, sameQuery } from "../lib/paging.js"

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
