import { Effect, Formatter, Logger } from "effect"

/**
 * Lines written in batches: appended to a buffer, and written to the sink at
 * once when the current turn of the event loop is over (or when the buffer
 * holds `maxBytes`), in the order they were appended. A request's line costs
 * one string append instead of a console call and a write; a turn that
 * answers a batch of requests writes their lines in one write.
 */
export const makeLineBuffer = (sink: (chunk: string) => void, maxBytes = 256 * 1024) => {
  let pending = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending === "") return
    const chunk = pending
    pending = ""
    sink(chunk)
  }
  const append = (line: string) => {
    pending += line
    if (pending.length >= maxBytes) return flush()
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  return { append, flush }
}

const isPlain = (value: unknown) => {
  const type = typeof value
  return type === "string" || type === "number" || type === "boolean" || value === null
}

/**
 * Exactly `Logger.formatJson`'s line. Its replacer (which redacts, formats
 * bigints and errors, and breaks cycles) changes nothing in an entry whose
 * message and annotations are plain strings, numbers and booleans, like every
 * request line: those are serialised by `JSON.stringify` alone, the rest by
 * `Formatter.formatJson`. (Tested to agree, in test/jsonLog.test.ts.)
 */
export const formatJsonLine = (entry: ReturnType<typeof Logger.formatStructured.log>): string => {
  if (entry.cause !== undefined || !isPlain(entry.message)) return Formatter.formatJson(entry)
  for (const key in entry.annotations) if (!isPlain(entry.annotations[key])) return Formatter.formatJson(entry)
  return JSON.stringify(entry)
}

/**
 * `Logger.consoleJson`'s lines, one JSON object per line, written to stdout in
 * batches (`makeLineBuffer`). Whatever is still buffered is written when the
 * logger's scope closes, and, should the process exit some other way, on
 * `exit`: a SIGTERM loses no line. `sink` is stdout but in tests.
 */
export const batchedJsonLogger = (sink: (chunk: string) => void = (chunk) => process.stdout.write(chunk)) =>
  Effect.gen(function*() {
    const lines = makeLineBuffer(sink)
    process.on("exit", lines.flush)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        lines.flush()
        process.off("exit", lines.flush)
      })
    )
    return Logger.make((options) => lines.append(formatJsonLine(Logger.formatStructured.log(options)) + "\n"))
  })
