import { Effect } from "effect"
import { once } from "node:events"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { describe, expect, it, onTestFinished } from "vitest"
import { type Check, makeLedger, runPhases } from "../src/checks.ts"
import { anonymous, Http, makeHttp } from "../src/http.ts"
import type { CheckResult } from "../src/model.ts"

/** A real service that answers every request at once, counting them. */
const startService = async () => {
  let requests = 0
  const server = createServer((_request, response) => {
    requests++
    response.writeHead(200, { "content-type": "application/json" })
    response.end("[]")
  })
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  onTestFinished(() => {
    server.closeAllConnections()
    server.close()
  })
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests: () => requests }
}

/** Runs the checks as a run does, against the service, and gives their results. */
const runChecks = (baseUrl: string, checks: ReadonlyArray<Check>, bounds: { seconds: number; requests: number }) =>
  Effect.runPromise(Effect.gen(function*() {
    const http = yield* makeHttp({
      baseUrl,
      maxWaitSeconds: 120,
      requestTimeoutSeconds: 30,
      observe: () => {},
      progress: () => {}
    })
    const reported: Array<CheckResult> = []
    const results = yield* runPhases(
      [{ name: "general", checks }],
      () => true,
      (result) => reported.push(result),
      bounds,
      makeLedger()
    )
      .pipe(Effect.provideService(Http, http))
    return { results, reported }
  }))

const check = (id: string, run: Check["run"], bounds: Pick<Check, "maxRequests" | "extraSeconds"> = {}): Check => ({
  id,
  area: "bounds",
  tag: "spec",
  title: id,
  run,
  ...bounds
})

/** A check that never stops sending, whatever comes back. */
const endless = Effect.gen(function*() {
  const http = yield* Http
  while (true) yield* http.send({ path: "/pets", credential: anonymous })
})

describe("the bounds of a check", () => {
  it("a check that would send forever fails at its bound in requests, having sent no more, and the next one runs", async () => {
    const service = await startService()
    const { results } = await runChecks(service.baseUrl, [
      check("endless", endless),
      check("after", Effect.void)
    ], { seconds: 600, requests: 25 })
    expect(results.map((result) => [result.id, result.status])).toEqual([["endless", "fail"], ["after", "pass"]])
    expect(results[0]!.failure).toMatchObject({
      expected: "an outcome within 25 requests, the most this check sends",
      received: "the service's answers kept the check going past 25 requests"
    })
    expect(service.requests()).toBe(25)
  })

  it("a check's own bound in requests replaces the run's", async () => {
    const service = await startService()
    const { results } = await runChecks(service.baseUrl, [check("endless", endless, { maxRequests: 40 })], {
      seconds: 600,
      requests: 25
    })
    expect(results[0]!.status).toBe("fail")
    expect(service.requests()).toBe(40)
  })

  it("a check that never ends fails at its bound in time, saying so, and the next one runs", async () => {
    const service = await startService()
    const { results, reported } = await runChecks(service.baseUrl, [
      check("stalled", Effect.never),
      check("after", Effect.void)
    ], { seconds: 1, requests: 25 })
    expect(results.map((result) => [result.id, result.status])).toEqual([["stalled", "fail"], ["after", "pass"]])
    expect(results[0]!.failure).toMatchObject({
      expected: "the check to end within 1 s (--check-timeout)",
      received: "it had not ended: the service's answers were too slow, or kept it waiting"
    })
    expect(reported.map((result) => result.id)).toEqual(["stalled", "after"])
  })
})
