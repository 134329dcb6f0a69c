import { describe, expect, it } from "vitest"
import { RECONNECT_DELAY_CAP_SECONDS, reconnectDelaySeconds } from "../src/db/postgresDriver.ts"
import { SERVICE_UNAVAILABLE_RETRY_SECONDS } from "../src/http/errors.ts"

describe("reconnecting to PostgreSQL after failed attempts", () => {
  it("waits no longer than the cap however long the outage was, so the pool is back within the Retry-After its 503s give", () => {
    expect(RECONNECT_DELAY_CAP_SECONDS).toBeLessThan(SERVICE_UNAVAILABLE_RETRY_SECONDS)
    for (const failures of [7, 10, 50, 1_000]) {
      for (let draw = 0; draw < 100; draw++) {
        const delay = reconnectDelaySeconds(failures)
        expect(delay).toBeGreaterThanOrEqual(RECONNECT_DELAY_CAP_SECONDS / 2)
        expect(delay).toBeLessThanOrEqual(RECONNECT_DELAY_CAP_SECONDS)
      }
    }
  })

  it("retries at once after the first failures, and spreads the processes' attempts", () => {
    const delays = Array.from({ length: 100 }, () => reconnectDelaySeconds(1))
    expect(Math.max(...delays)).toBeLessThanOrEqual(0.03)
    expect(new Set(delays).size).toBeGreaterThan(1)
  })
})
