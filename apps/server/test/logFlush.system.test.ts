/**
 * Request log lines are written in batches (src/observability/jsonLog.ts): none
 * may be lost when the process stops. A burst of requests is in flight when
 * SIGTERM arrives; every request that was answered has its line in the output
 * once the process has exited.
 */
import { describe, expect, it } from "vitest"
import { startServerProcess, waitForExit } from "@petstore/test-support"

describe("batched request log", () => {
  it("loses no line on SIGTERM", async () => {
    const { server, origin } = await startServerProcess({ DATA_DIR: ":memory:", LOG_LEVEL: "Info" })
    try {
      const ids = Array.from({ length: 300 }, (_, i) => `flush-${i}`)
      let signalled = false
      const answers = await Promise.all(
        ids.map((id) =>
          fetch(`${origin}/healthz`, { headers: { "x-request-id": id } }).then(
            (response) => {
              if (!signalled) {
                signalled = true
                server.child.kill("SIGTERM")
              }
              return response.headers.get("x-request-id")
            },
            () => undefined
          )
        )
      )
      const exit = await waitForExit(server.child, 15_000)
      expect(exit, `still running 15 s after SIGTERM:\n${server.output()}`).toMatchObject({ code: 0 })
      const logged = new Set(
        server.output().split("\n").filter((line) => line.startsWith("{")).map((line) =>
          JSON.parse(line) as {
            message: string
            annotations: { requestId?: string }
          }
        ).filter((line) => line.message === "request").map((line) => line.annotations.requestId)
      )
      const answered = answers.filter((id): id is string => typeof id === "string")
      expect(answered.length).toBeGreaterThan(0)
      expect(answered.filter((id) => !logged.has(id))).toEqual([])
      // Every line is whole: the output parses line by line (above) and ends with a newline.
      expect(server.output().endsWith("\n")).toBe(true)
    } finally {
      await server.stop()
    }
  })
})
