import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { prometheusText } from "../src/observability/metrics.ts"

const scrape = () => Effect.runPromise(prometheusText)

/** The value of an unlabelled sample, and that its metric is declared a gauge. */
const gauge = (text: string, name: string): number => {
  expect(text).toContain(`# TYPE ${name} gauge`)
  const line = text.split("\n").find((line) => line.startsWith(`${name} `))
  expect(line, `${name} in:\n${text}`).toBeDefined()
  return Number(line!.slice(name.length + 1))
}

const block = (millis: number) => {
  const until = performance.now() + millis
  while (performance.now() < until) {
    // Holding the event loop, as a slow synchronous handler would.
  }
}

describe("process metrics", () => {
  it("reports the process's resident memory and heap, in bytes", async () => {
    const text = await scrape()
    const now = process.memoryUsage()
    // Memory moves between two reads a millisecond apart, but not by half: a unit or a swapped reading would.
    const near = (value: number, actual: number) => {
      expect(value).toBeGreaterThan(actual / 2)
      expect(value).toBeLessThan(actual * 2)
    }
    near(gauge(text, "process_resident_memory_bytes"), now.rss)
    near(gauge(text, "nodejs_heap_size_total_bytes"), now.heapTotal)
    const heapUsed = gauge(text, "nodejs_heap_size_used_bytes")
    expect(heapUsed).toBeGreaterThan(0)
    expect(heapUsed).toBeLessThanOrEqual(gauge(text, "nodejs_heap_size_total_bytes"))
    expect(gauge(text, "nodejs_heap_size_total_bytes")).toBeLessThan(gauge(text, "process_resident_memory_bytes") * 2)
  })

  it("reports how long the event loop was held since the previous scrape", async () => {
    await scrape()
    block(1_000)
    // Let the delay monitor's timer tick once after the block, as it would between two scrapes.
    await new Promise((resolve) => setTimeout(resolve, 30))
    const held = await scrape()
    // However slow the machine, a loop held for 1 s ran its 10 ms timer at least 990 ms late.
    expect(gauge(held, "nodejs_eventloop_lag_max_seconds")).toBeGreaterThanOrEqual(0.99)
    const p99 = gauge(held, "nodejs_eventloop_lag_p99_seconds")
    const mean = gauge(held, "nodejs_eventloop_lag_mean_seconds")
    expect(mean).toBeGreaterThan(0)
    expect(mean).toBeLessThanOrEqual(p99)
    expect(p99).toBeLessThanOrEqual(gauge(held, "nodejs_eventloop_lag_max_seconds"))

    // The next scrape covers only the 50 ms since: the block is no longer in it (a busy machine may still
    // delay a timer by a few hundred ms, never by the whole second).
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(gauge(await scrape(), "nodejs_eventloop_lag_max_seconds")).toBeLessThan(0.99)
  })
})
