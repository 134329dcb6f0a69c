import { describe, expect, it } from "vitest"
import { parseK6Bins } from "./k6.ts"

describe("K6_BINS", () => {
  it("takes paths separated by : or , (with spaces around them), as the README says", () => {
    expect(parseK6Bins("/opt/k6-v0.49.0/k6:/opt/k6-v2.2.0/k6")).toEqual(["/opt/k6-v0.49.0/k6", "/opt/k6-v2.2.0/k6"])
    expect(parseK6Bins("/opt/k6-v0.49.0/k6,/opt/k6-v2.2.0/k6")).toEqual(["/opt/k6-v0.49.0/k6", "/opt/k6-v2.2.0/k6"])
    expect(parseK6Bins(" /a/k6 , /b/k6:/c/k6 ")).toEqual(["/a/k6", "/b/k6", "/c/k6"])
  })

  it("is empty when unset or blank", () => {
    expect(parseK6Bins(undefined)).toEqual([])
    expect(parseK6Bins("")).toEqual([])
    expect(parseK6Bins(" , : ")).toEqual([])
  })
})
