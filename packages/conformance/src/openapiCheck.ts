import { Effect } from "effect"
import { type Check, skipped } from "./checks.ts"
import type { Exchange } from "./http.ts"
import { CheckFailed } from "./model.ts"
import { makeDocumentObserver, makeDocumentValidator } from "./openapi.ts"

/** The deployment's document as the run found it: where, and the responses checked against it so far. */
export interface LoadedDocument {
  readonly url: string | undefined
  readonly observe: (exchange: Exchange) => void
  readonly tally: () => { readonly checked: number; readonly broken: number }
  readonly check: Effect.Effect<void, CheckFailed | ReturnType<typeof skipped>>
}

const DOCUMENT_TIMEOUT_MILLIS = 30_000

/**
 * Fetches the document: `openapi` when given (a failure to load it fails the
 * check), else `<base URL>/openapi.json`, whose absence only skips it.
 */
export const loadDocument = (baseUrl: string, openapi: string | false | undefined) =>
  Effect.gen(function*() {
    const none = (check: LoadedDocument["check"]): LoadedDocument => ({
      url: undefined,
      observe: () => {},
      tally: () => ({ checked: 0, broken: 0 }),
      check
    })
    if (openapi === false) return none(Effect.fail(skipped("no OpenAPI document asked for")))
    const explicit = openapi !== undefined
    const url = explicit ? new URL(openapi, `${baseUrl}/`).href : `${baseUrl}/openapi.json`
    const fetched = yield* Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(url, {
          headers: { accept: "application/json" },
          signal: AbortSignal.any([signal, AbortSignal.timeout(DOCUMENT_TIMEOUT_MILLIS)])
        })
        const text = await response.text()
        if (!response.ok) return { problem: `GET ${url} answered ${response.status}` }
        try {
          return { document: JSON.parse(text) as unknown }
        } catch {
          return { problem: `GET ${url} did not answer JSON` }
        }
      },
      catch: (error) => `GET ${url} gave no answer: ${error instanceof Error ? error.message : String(error)}`
    }).pipe(Effect.catch((problem) => Effect.succeed({ problem })))
    const unusable = (problem: string) =>
      none(
        explicit
          ? Effect.fail(new CheckFailed({ request: `GET ${url}`, expected: "the OpenAPI document given with --openapi", received: problem }))
          : Effect.fail(skipped(`${problem}: give the deployment's document with --openapi URL`))
      )
    if ("problem" in fetched) return unusable(fetched.problem)
    const validator = yield* Effect.try(() => makeDocumentValidator(fetched.document, baseUrl)).pipe(
      Effect.catch(() => Effect.succeed(undefined))
    )
    if (validator === undefined) return unusable(`${url} is not an OpenAPI document with paths`)
    const observer = makeDocumentObserver(validator)
    return {
      url,
      observe: observer.observe,
      tally: observer.tally,
      check: Effect.gen(function*() {
        const { checked, broken, first } = observer.tally()
        if (checked === 0) return yield* skipped(`no response of the run is of an operation ${url} describes`)
        if (first !== undefined) {
          return yield* new CheckFailed({ ...first, received: `${first.received} (${broken} of ${checked} responses)` })
        }
      })
    } satisfies LoadedDocument
  })

export const documentCheck = (document: LoadedDocument): Check => ({
  id: "openapi.responses",
  area: "openapi",
  tag: "spec",
  title: "every response agrees with the deployment's OpenAPI document: status, media type, body and headers",
  run: document.check
})
