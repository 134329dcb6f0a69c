import { describe, expect, it, onTestFinished } from "vitest"
import { runSuite } from "../src/index.ts"
import type { ApiKey, Plan } from "../src/model.ts"
import { storeCustomers } from "../src/store.ts"
import { startFixture } from "./fixture/server.ts"
import { failures, keysOf } from "./support/keys.ts"

const keysOfCounts = (counts: Partial<Record<Plan, number>>) => {
  const keys = { free: [], pro: [], business: [], enterprise: [] } as Record<Plan, Array<ApiKey>>
  for (const [plan, count] of Object.entries(counts) as Array<[Plan, number]>) {
    keys[plan] = Array.from(
      { length: count },
      (_, index) => ({ plan, secret: `${plan}-${index + 1}`, label: `${plan} key ${index + 1}` })
    )
  }
  return keys
}

const labels = (keys: ReadonlyArray<ApiKey>) => keys.map((key) => key.label)

describe("the store checks' customer keys", () => {
  it("are keys no plan check spends, the most room first, when there are two", () => {
    const { customers, after } = storeCustomers({
      keys: keysOfCounts({ free: 2, pro: 2, business: 2, enterprise: 2 }),
      daily: false
    })
    expect(labels(customers)).toEqual(["business key 1", "enterprise key 1", "pro key 1"])
    expect(after).toEqual(["general"])
  })

  it("take a plan's burst key only after that plan's checks", () => {
    const { customers, after } = storeCustomers({ keys: keysOfCounts({ free: 2, pro: 1 }), daily: false })
    expect(labels(customers)).toEqual(["pro key 1", "free key 1"])
    expect(after).toEqual(["general", "pro"])
  })

  it("never take a key that spends its day with --daily", () => {
    expect(storeCustomers({ keys: keysOfCounts({ free: 1 }), daily: true }).customers).toEqual([])
    const { customers, after } = storeCustomers({ keys: keysOfCounts({ free: 3 }), daily: true })
    expect(labels(customers)).toEqual(["free key 1", "free key 2"])
    expect(after).toEqual(["general", "free"])
  })
})

describe("the store checks against the fault-free fixture", () => {
  it("skip what needs a staff key or a second customer, saying which key to give, and pass the rest", async () => {
    const fixture = await startFixture({ recoverySeconds: 1 })
    onTestFinished(() => fixture.close())
    const result = await runSuite({ baseUrl: fixture.baseUrl, keys: keysOf(fixture, { business: 1 }), grep: "store." })
    expect(failures(result)).toEqual([])
    const skipped = Object.fromEntries(
      result.results.filter((check) => check.status === "skip").map((check) => [check.id, check.reason])
    )
    expect(Object.keys(skipped).sort()).toEqual(
      ["store.delete", "store.delete-open-order", "store.deliver", "store.other-customer", "store.staff-every-order"]
    )
    expect(skipped["store.deliver"]).toContain(
      "needs a staff key: add staff=KEY to the --keys-file, or set CONFORMANCE_KEY_STAFF"
    )
    expect(skipped["store.other-customer"]).toContain("needs a second customer key")
    expect(result.results.find((check) => check.id === "store.order-race")?.status).toBe("pass")
  })
})
