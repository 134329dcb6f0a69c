import { once } from "node:events"
import { createServer, type IncomingMessage } from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, spawnServer } from "@petstore/test-support"

let server: ServerProcess | undefined
const collector = createServer()
afterAll(async () => {
  await server?.stop()
  collector.close()
})

const readJson = async (request: IncomingMessage) => {
  let body = ""
  for await (const chunk of request) body += chunk
  return JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> }
}

describe("tracing", () => {
  it("exports request spans to the OTLP collector named by OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    const spanNames: Array<string> = []
    collector.on("request", (request, response) => {
      void (async () => {
        if (request.url === "/v1/traces") {
          const body = await readJson(request)
          for (const resource of body.resourceSpans) {
            for (const scope of resource.scopeSpans) for (const span of scope.spans) spanNames.push(span.name)
          }
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })()
    })
    collector.listen(0, "127.0.0.1")
    await once(collector, "listening")
    const { port: collectorPort } = collector.address() as { port: number }

    const port = await freePort()
    server = spawnServer({
      PORT: String(port),
      DATA_DIR: ":memory:",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`
    })
    // A hang guard, not a judgement of speed: at load 47 the server took 116 s to start.
    const deadline = Date.now() + 240_000
    while (Date.now() < deadline) {
      await fetch(`http://127.0.0.1:${port}/v1/pets`).catch(() => undefined)
      if (spanNames.some((name) => name.includes("GET"))) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(spanNames.some((name) => name.includes("GET")), `spans: ${spanNames.join(", ")}\n${server.output()}`).toBe(
      true
    )
  })
})
