import { readFileSync } from "node:fs"
import { afterEach, describe, expect, it } from "vitest"
import {
  adoptionSettings,
  eventsSettings,
  loadSettings,
  parseThresholdName,
  rateLimitsSettings,
  sampleGuards,
  SERVED_REQUESTS,
  smokeSettings,
  soakSettings,
  storyEventTypes,
  stressSettings
} from "../lib/options.js"

/** k6's `__ENV`, which lib/config.js reads: under Node, the test sets it. */
const withEnv = <A>(env: Record<string, string>, read: () => A): A => {
  ;(globalThis as { __ENV?: Record<string, string> }).__ENV = env
  return read()
}
afterEach(() => {
  delete (globalThis as { __ENV?: Record<string, string> }).__ENV
})

const settingsOf = {
  "smoke.js": smokeSettings,
  "rate-limits.js": rateLimitsSettings,
  "load.js": loadSettings,
  "stress.js": stressSettings,
  "soak.js": soakSettings,
  "adoption.js": adoptionSettings,
  "events.js": eventsSettings
} as const
type Script = keyof typeof settingsOf
const scripts = Object.keys(settingsOf) as ReadonlyArray<Script>

const thresholdsOf = (script: Script, env: Record<string, string>) =>
  withEnv(env, () => settingsOf[script]().options.thresholds ?? {})

describe("the scripts' options, as `k6 inspect` evaluates them", () => {
  it.each(scripts)("%s: its options evaluate with no variable set, no key included", (script) => {
    const settings = withEnv({}, () => settingsOf[script]())
    expect(Object.keys(settings.options.scenarios ?? {}).length).toBeGreaterThan(0)
    expect(Object.keys(settings.options.thresholds ?? {}).length).toBeGreaterThan(0)
  })

  it("a variable that is set but wrong still stops the run at init, naming it", () => {
    expect(() => withEnv({ RATE: "fast" }, loadSettings)).toThrow(/RATE must be a number/)
    expect(() => withEnv({ BASE_URL: "localhost:8080" }, stressSettings)).toThrow(/BASE_URL/)
    expect(() => withEnv({ PAGE_SIZE: "500" }, eventsSettings)).toThrow(/PAGE_SIZE/)
    expect(() => withEnv({ PLANS: "gold" }, rateLimitsSettings)).toThrow(/PLANS/)
  })

  it("the keys are read when set, and none is an empty list at init (setup refuses it)", () => {
    expect(withEnv({ API_KEYS: " psk_a , psk_b ," }, loadSettings).keys).toEqual(["psk_a", "psk_b"])
    expect(withEnv({}, loadSettings).keys).toEqual([])
    expect(withEnv({}, smokeSettings).key).toBeUndefined()
    expect(withEnv({ API_KEYS: "psk_r" }, rateLimitsSettings).honourKey).toBe("psk_r")
    expect(withEnv({}, rateLimitsSettings).honourKey).toBeUndefined()
  })
})

describe("a threshold on a sub-metric that received no sample fails", () => {
  it("every guarded sub-metric gets a count>0 on the counter of its samples, with the same tags", () => {
    const guards = sampleGuards(
      {
        served_req_duration: ["p(95)<250"],
        "served_req_duration{op:get}": ["p(95)<250"],
        "http_req_failed{band:0010-0028}": ["rate<0.01"],
        "served_req_duration{band:0010-0028}": ["p(95)<500"],
        "rate_limited{op:get}": ["rate<0.02"]
      },
      ["served_req_duration", "http_req_failed"],
      SERVED_REQUESTS
    )
    expect(guards.thresholds).toEqual({
      "served_requests{op:get}": ["count>0"],
      "served_requests{band:0010-0028}": ["count>0"]
    })
    // setup seeds each guard with 0: a counter k6 never got a sample of is not judged on every release.
    expect(guards.seeds).toEqual([{ op: "get" }, { band: "0010-0028" }])
  })

  it("reads a threshold's metric and tag filter", () => {
    expect(parseThresholdName("rl_admitted{plan:free,window:w-1}")).toEqual({
      metric: "rl_admitted",
      tags: { plan: "free", window: "w-1" }
    })
    expect(parseThresholdName("checks")).toEqual({ metric: "checks", tags: undefined })
  })

  it.each(["load.js", "stress.js", "soak.js", "adoption.js"] as const)(
    "%s: each latency or error sub-metric it judges has its guard, seeded in setup",
    (script) => {
      const settings = withEnv({ METRICS_URL: "http://127.0.0.1:8081/metrics" }, () => settingsOf[script]())
      const thresholds = settings.options.thresholds ?? {}
      const subMetrics = Object.keys(thresholds).map(parseThresholdName).filter((name) =>
        (name.metric === "served_req_duration" || name.metric === "http_req_failed") && name.tags !== undefined
      )
      expect(subMetrics.length).toBeGreaterThan(0)
      for (const { tags } of subMetrics) {
        const filter = Object.entries(tags!).map(([tag, value]) => `${tag}:${value}`).join(",")
        expect(thresholds[`served_requests{${filter}}`], filter).toEqual(["count>0"])
        expect(settings.guardSeeds).toContainEqual(tags)
      }
    }
  )

  it("events.js: every type of event a story shows has its own event_lag, guarded by events_seen of that type", () => {
    const settings = withEnv({ API_KEY_STAFF: "psk_staff" }, eventsSettings)
    const thresholds = settings.options.thresholds ?? {}
    const types = storyEventTypes(true, 0.3)
    expect(types).toEqual(["pet.created", "pet.updated", "order.placed", "order.cancelled", "order.delivered"])
    for (const type of types) {
      expect(thresholds[`event_lag{type:${type}}`]).toEqual(["p(95)<1000"])
      expect(thresholds[`events_seen{type:${type}}`]).toEqual(["count>0"])
      expect(settings.guardSeeds).toContainEqual({ type })
    }
    // Without staff no order is delivered, and with staff delivering every one, none cancelled by its customer.
    expect(storyEventTypes(false, 0.3)).not.toContain("order.delivered")
    expect(storyEventTypes(true, 1)).not.toContain("order.cancelled")
    expect(storyEventTypes(true, 0)).not.toContain("order.delivered")
  })
})

/**
 * The thresholds load-tests/README.md names under "What the thresholds mean", by script: each table row's
 * first cell, its metrics in backticks (`metric{tag:…}: …`, or `{tag:…}` continuing the metric before).
 */
const readmeThresholds = (): Record<string, Array<{ metric: string; tagKeys: ReadonlyArray<string> }>> => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
  const section = readme.slice(readme.indexOf("## What the thresholds mean"), readme.indexOf("## Reading the summary"))
  const named: Record<string, Array<{ metric: string; tagKeys: ReadonlyArray<string> }>> = {}
  let script: string | undefined
  for (const line of section.split("\n")) {
    const heading = /^### (\S+\.js)/.exec(line)
    if (heading !== null) script = heading[1]
    if (script === undefined || !line.startsWith("| `")) continue
    const cell = line.split(/(?<!\\)\|/)[1] ?? ""
    let metric: string | undefined
    for (const [, code] of cell.matchAll(/`([^`]+)`/g)) {
      const match = /^([a-z][a-z0-9_]*)?(\{[^}]*\})?(?=[:\s]|$)/.exec(code!)
      if (match === null || (match[1] === undefined && match[2] === undefined)) continue
      metric = match[1] ?? metric
      if (metric === undefined) continue
      const tagKeys = match[2] === undefined
        ? []
        : match[2].slice(1, -1).split(",").map((pair) => pair.split(":")[0]!.trim())
      ;(named[script] ??= []).push({ metric, tagKeys })
    }
  }
  return named
}

describe("load-tests/README.md", () => {
  const named = readmeThresholds()

  it("names thresholds of every script", () => {
    expect(Object.keys(named).sort()).toEqual([...scripts].sort())
  })

  it.each(scripts)("%s: every threshold the README names exists, with its tags", (script) => {
    // Everything on: the memory scenario, a staff key.
    const thresholds = Object.keys(
      thresholdsOf(script, { METRICS_URL: "http://127.0.0.1:8081/metrics", API_KEY_STAFF: "psk_staff" })
    ).map(parseThresholdName)
    for (const { metric, tagKeys } of named[script] ?? []) {
      const found = thresholds.some((threshold) =>
        threshold.metric === metric &&
        (tagKeys.length === 0
          ? threshold.tags === undefined
          : threshold.tags !== undefined && tagKeys.every((key) => key in threshold.tags!))
      )
      expect(found, `${script}: ${metric}${tagKeys.length > 0 ? `{${tagKeys.join(",")}}` : ""}`).toBe(true)
    }
  })
})
