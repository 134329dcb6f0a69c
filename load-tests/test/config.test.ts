import { planQuotas } from "@petstore/contract"
import { expect, it } from "vitest"
import { PLANS } from "../lib/config.js"

// k6 cannot import the contract, so lib/config.js restates the plans' quotas: they must stay the contract's.
it("lib/config.js states every plan's quotas as the contract does", () => {
  expect(PLANS).toEqual(planQuotas)
})
