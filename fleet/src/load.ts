/**
 * Clients of the fleet: single requests, bursts and a steady load, over
 * node:http with keep-alive, every one bounded in count and time.
 */
import { Agent, request } from "node:http"

export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
}

/** An answer, or why there was none (status 0): a reset, a refused connection, a timeout. */
export type Outcome = Answer | { readonly status: 0; readonly error: string }

export interface RequestOptions {
  readonly method?: "GET" | "POST" | "DELETE"
  readonly headers?: Record<string, string>
  readonly body?: unknown
  readonly agent?: Agent
  readonly timeoutMs?: number
}

/** One request; never rejects. */
export const send = (url: string, options: RequestOptions = {}): Promise<Outcome> =>
  new Promise((resolve) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = request(url, {
      method: options.method ?? "GET",
      agent: options.agent ?? false,
      headers: {
        ...options.headers,
        ...(body === undefined
          ? {}
          : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) })
      },
      timeout: options.timeoutMs ?? 15_000
    })
    let settled = false
    const settle = (outcome: Outcome) => {
      if (settled) return
      settled = true
      resolve(outcome)
    }
    req.on("timeout", () => req.destroy(new Error(`no answer within ${options.timeoutMs ?? 15_000} ms`)))
    req.on("error", (error: NodeJS.ErrnoException) =>
      settle({ status: 0, error: `${error.code ?? ""} ${error.message}`.trim() }))
    req.on("response", (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (text += chunk))
      response.on("error", (error: NodeJS.ErrnoException) =>
        settle({ status: 0, error: `${error.code ?? ""} ${error.message}`.trim() }))
      response.on("end", () => {
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) {
            headers[name] = Array.isArray(value) ? value.join(", ") : value
          }
        }
        settle({ status: response.statusCode ?? 0, headers, text })
      })
    })
    req.end(body)
  })

/** `count` calls of `make`, at most `concurrency` at a time; the outcomes in call order. */
export const burst = async <A>(
  count: number,
  concurrency: number,
  make: (index: number) => Promise<A>
): Promise<Array<A>> => {
  const results: Array<A> = new Array(count)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const index = next++
      results[index] = await make(index)
    }
  }))
  return results
}

/** `n` requests at once, each on its own connection, as `n` clients would send them. */
export const concurrently = (n: number, url: string, options: RequestOptions = {}) =>
  burst(n, n, () => send(url, options))

export interface LoadReport {
  readonly requests: number
  readonly byStatus: Readonly<Record<string, number>>
  /** Ids of the pets whose creation was answered 201. */
  readonly created: ReadonlyArray<number>
  /** Every answer that was not a 2xx, with when it came (ms since the load started), the first 50 of them. */
  readonly failures: ReadonlyArray<{ readonly atMs: number; readonly what: string }>
  readonly failed: number
  readonly durationMs: number
}

export interface SteadyLoad {
  /** When it started (Date.now()); failures' `atMs` count from here. */
  readonly startedAt: number
  /** Stops sending, waits for the requests in flight, and reports (the same report when called again). */
  readonly stop: () => Promise<LoadReport>
  /** Requests answered so far. */
  readonly answered: () => number
  /** Failures so far (not 2xx, or no answer). */
  readonly failedSoFar: () => number
}

/**
 * `workers` clients, each sending one request after another with `pauseMs`
 * between them: alternately a POST /v1/pets (its id kept when answered 201) and
 * a GET /v1/pets. Stops by itself after `maxRequests` or `maxMs`, whichever
 * comes first.
 */
export const steadyLoad = (options: {
  readonly origin: string
  readonly key: string
  readonly workers: number
  readonly pauseMs: number
  readonly maxRequests: number
  readonly maxMs: number
  readonly label: string
}): SteadyLoad => {
  const agent = new Agent({ keepAlive: true, maxSockets: options.workers })
  const startedAt = Date.now()
  const byStatus: Record<string, number> = {}
  const created: Array<number> = []
  const failures: Array<{ atMs: number; what: string }> = []
  let failed = 0
  let sent = 0
  let answered = 0
  let stopping = false
  const auth = { authorization: `Bearer ${options.key}` }
  const worker = async (index: number) => {
    while (!stopping && sent < options.maxRequests && Date.now() - startedAt < options.maxMs) {
      const n = sent++
      const write = n % 2 === 0
      const outcome = write
        ? await send(`${options.origin}/v1/pets`, {
          method: "POST",
          agent,
          headers: auth,
          body: { name: `${options.label} ${index}.${n}`, categoryId: 1 }
        })
        : await send(`${options.origin}/v1/pets?limit=5`, { agent, headers: auth })
      answered++
      const status = String(outcome.status)
      byStatus[status] = (byStatus[status] ?? 0) + 1
      if (write && outcome.status === 201 && "text" in outcome) {
        created.push((JSON.parse(outcome.text) as { id: number }).id)
      }
      if (outcome.status < 200 || outcome.status > 299) {
        failed++
        if (failures.length < 50) {
          const what = "error" in outcome
            ? `${write ? "POST" : "GET"} no answer: ${outcome.error}`
            : `${write ? "POST" : "GET"} ${outcome.status} ${outcome.text.slice(0, 200)}`
          failures.push({ atMs: Date.now() - startedAt, what })
        }
      }
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs))
    }
  }
  const running = Promise.all(Array.from({ length: options.workers }, (_, i) => worker(i)))
  let report: Promise<LoadReport> | undefined
  return {
    startedAt,
    answered: () => answered,
    failedSoFar: () => failed,
    stop: () =>
      report ??= (async () => {
        stopping = true
        await running
        agent.destroy()
        return {
          requests: answered,
          byStatus: { ...byStatus },
          created,
          failures,
          failed,
          durationMs: Date.now() - startedAt
        }
      })()
  }
}

/** Counts of answers by status, and of failures to answer by their error. */
export const tally = (outcomes: ReadonlyArray<Outcome>): Record<string, number> => {
  const counts: Record<string, number> = {}
  for (const outcome of outcomes) {
    const what = "error" in outcome ? `no answer (${outcome.error})` : String(outcome.status)
    counts[what] = (counts[what] ?? 0) + 1
  }
  return counts
}
