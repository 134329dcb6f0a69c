import { Effect, Formatter, Logger, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { batchedJsonLogger, formatJsonLine, makeLineBuffer } from "../src/observability/jsonLog.ts"

/** What `Logger.formatStructured` makes of a log call with these annotations. */
const entryOf = (message: unknown, annotations: Record<string, unknown>, cause?: unknown) => {
  let entry: ReturnType<typeof Logger.formatStructured.log> | undefined
  const capture = Logger.make((options) => (entry = Logger.formatStructured.log(options)))
  const log = cause === undefined ? Effect.logInfo(message) : Effect.logError(message, cause)
  Effect.runSync(log.pipe(Effect.annotateLogs(annotations), Effect.provide(Logger.layer([capture]))))
  return entry!
}

describe("JSON log lines", () => {
  it("are exactly Logger.formatJson's, for request lines and for everything else", () => {
    const entries = [
      entryOf("request", {
        requestId: "a-1",
        method: "GET",
        route: "/v1/pets",
        status: 200,
        durationMs: 1.25,
        keyId: "key_1",
        plan: "pro",
        quota: "admitted"
      }),
      entryOf("request", { route: "/v1/pets?x=\"quoted\"\n\u2028", status: 499, ok: true, nothing: null }),
      entryOf("configuration", { adminToken: Redacted.make("secret"), nested: { a: 1, b: [1, 2n] }, big: 3n }),
      entryOf("unhandled failure", { requestId: "b" }, new Error("boom")),
      entryOf(["two", "parts"], {}),
      entryOf({ an: "object" }, { at: new Date(0) })
    ]
    for (const entry of entries) expect(formatJsonLine(entry)).toBe(Formatter.formatJson(entry))
    expect(formatJsonLine(entries[2]!)).not.toContain("secret")
  })

  it("are written in order, in one write per turn of the event loop, or as soon as the buffer is full", async () => {
    const writes: Array<string> = []
    const lines = makeLineBuffer((chunk) => writes.push(chunk), 20)
    lines.append("one\n")
    lines.append("two\n")
    expect(writes).toEqual([])
    await new Promise((resolve) => setImmediate(resolve))
    expect(writes).toEqual(["one\ntwo\n"])
    lines.append("three\n")
    lines.append("a line long enough to fill it\n")
    expect(writes).toEqual(["one\ntwo\n", "three\na line long enough to fill it\n"])
    lines.append("four\n")
    lines.flush()
    expect(writes.at(-1)).toBe("four\n")
    await new Promise((resolve) => setImmediate(resolve))
    expect(writes).toHaveLength(3)
  })

  it("are all written when the logger's scope closes, before the turn ends", async () => {
    const writes: Array<string> = []
    await Effect.runPromise(
      Effect.logInfo("last words").pipe(
        Effect.annotateLogs({ requestId: "r" }),
        Effect.provide(Logger.layer([batchedJsonLogger((chunk) => writes.push(chunk))]))
      )
    )
    expect(writes).toHaveLength(1)
    expect(JSON.parse(writes[0]!)).toMatchObject({ message: "last words", annotations: { requestId: "r" } })
  })

  it("are all written when the process exits with lines still buffered", () => {
    const module = fileURLToPath(new URL("../src/observability/jsonLog.ts", import.meta.url))
    const script = `
      import { Effect, Logger } from "effect"
      import { batchedJsonLogger } from ${JSON.stringify(module)}
      Effect.runFork(Effect.gen(function*() {
        for (let i = 0; i < 3; i++) yield* Effect.logInfo("line " + i)
        process.exit(0)
      }).pipe(Effect.provide(Logger.layer([batchedJsonLogger()]))))`
    const output = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL("..", import.meta.url))
    })
    expect(output.trim().split("\n").map((line) => JSON.parse(line).message)).toEqual(["line 0", "line 1", "line 2"])
  })
})
