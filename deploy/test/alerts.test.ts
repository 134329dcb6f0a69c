import {
  ADMIN_TOKEN,
  missingTool,
  serverEntry,
  type StartedProcess,
  startRedis,
  startServerProcess,
  type TestRedis
} from "@petstore/test-support"
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { parse } from "yaml"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { onPath, read, root } from "./repository.ts"

const promtool = onPath("promtool")
const rules = parse(read("deploy/prometheus/alerts.yml")) as {
  groups: Array<{ rules: Array<{ alert: string; expr: string; annotations: { runbook: string } }> }>
}
const alerts = rules.groups.flatMap((group) => group.rules)
const dashboard = JSON.parse(read("deploy/grafana/petstore-dashboard.json")) as {
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>
}
const expressions = [
  ...alerts.map((alert) => ({ where: `alert ${alert.alert}`, expr: alert.expr })),
  ...dashboard.panels.flatMap((panel) =>
    panel.targets.map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr }))
  )
]

/** The series a PromQL expression reads, with the labels it matches on: names with an underscore not called as functions. */
const selectors = (expr: string) =>
  [...expr.matchAll(/\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b(?!\s*\()(\{[^}]*\})?/g)].map(([, name, matchers]) => ({
    name: name!,
    labels: [...(matchers ?? "").matchAll(/([a-z_]+)\s*(?:=~|!=|!~|=)/g)].map(([, label]) => label!)
  }))

const run = (...args: Array<string>) =>
  spawnSync(promtool!, args, { cwd: join(root, "deploy/prometheus"), encoding: "utf8" })

describe.skipIf(promtool === undefined && missingTool("promtool is not on PATH (Debian's prometheus)").skip)(
  "the alerting rules",
  () => {
    it("pass promtool check rules", () => {
      const result = run("check", "rules", "alerts.yml")
      expect(result.status, result.stdout + result.stderr).toBe(0)
    })

    it("pass promtool test rules, with a test that fires each alert", () => {
      const result = run("test", "rules", "alerts.test.yml")
      expect(result.status, result.stdout + result.stderr).toBe(0)
      const tests = read("deploy/prometheus/alerts.test.yml")
      for (const { alert } of alerts) {
        expect(tests, alert).toMatch(
          new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels`)
        )
      }
    })
  }
)

describe("every alert has its runbook line", () => {
  it.each(alerts.map((alert) => alert.alert))("%s", (alert) => {
    expect(read("docs/deploying.md")).toMatch(new RegExp(`\\| \`${alert}\` \\|`))
  })
})

describe("every series an alert or a dashboard panel reads is one a real server exports", () => {
  let server: StartedProcess
  let redis: TestRedis
  let exported: Map<string, Set<string>>
  beforeAll(async () => {
    // On the Redis quota store, whose series (quota_store_available) an alert reads; the others are the same on every store.
    redis = await startRedis()
    server = await startServerProcess(
      { DATA_DIR: ":memory:", ANONYMOUS_RATE_LIMIT: "1", QUOTA_STORE: "redis", REDIS_URL: redis.url },
      undefined, // the readiness bound every suite uses, sized for a loaded machine
      serverEntry(join(root, "deploy/package.json"))
    )
    // Traffic that makes every series appear: health checks, an answered /v1 request, a refused one.
    const key = await server.createKey("free")
    for (const path of ["/healthz", "/readyz"]) await fetch(`${server.origin}${path}`)
    await fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    for (let i = 0; i < 3; i++) await fetch(`${server.origin}/v1/pets`)
    const text = await (await fetch(`${server.admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
      .text()
    exported = new Map()
    for (const [, name, labels] of text.matchAll(/^([a-z_][a-z0-9_]*)(?:\{([^}]*)\})? /gm)) {
      const known = exported.get(name!) ?? new Set<string>()
      for (const [, label] of (labels ?? "").matchAll(/([a-z_]+)="/g)) known.add(label!)
      exported.set(name!, known)
    }
  })
  afterAll(async () => {
    await server?.server.stop()
    await redis?.stop()
  })

  it.each(expressions)("$where", ({ expr }) => {
    const read = selectors(expr)
    expect(read.length).toBeGreaterThan(0)
    for (const { labels, name } of read) {
      expect([...exported.keys()], name).toContain(name)
      // `instance` is Prometheus' own label, added at the scrape.
      for (const label of labels.filter((label) => label !== "instance")) {
        expect([...exported.get(name)!], `${name} ${label}`).toContain(label)
      }
    }
  })

  it("counts /readyz under its own route, which the readiness alert reads", () => {
    expect([...exported.get("http_requests_total")!]).toEqual(expect.arrayContaining(["route", "status"]))
  })
})
