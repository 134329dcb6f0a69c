import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { resolve as resolvePath } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { type Check, skipped } from "./checks.ts"
import type { Exchange } from "./http.ts"
import { CheckFailed } from "./model.ts"
import { send as sendOnWire } from "./transport.ts"
import { makeDocumentObserver, makeDocumentValidator, makeWebhookPayloadValidator } from "./openapi.ts"

/** The deployment's document as the run found it: where, and the responses checked against it so far. */
export interface LoadedDocument {
  readonly url: string | undefined
  /** The document's paths (relative to its server, as written), when it could be had. */
  readonly paths?: ReadonlyArray<string>
  /** A webhook delivery's body judged by the document's top-level `webhooks`, when the document could be had. */
  readonly webhookPayload?: (type: string, body: unknown) => string | undefined | "undescribed"
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
    // An http(s) URL is fetched; anything else is a file (a path or a file: URL), such as a document kept with the release.
    const isFile = explicit && !/^https?:\/\//i.test(openapi)
    const url = !explicit
      ? `${baseUrl}/openapi.json`
      : !isFile
      ? openapi
      : openapi.startsWith("file:")
      ? openapi
      : pathToFileURL(resolvePath(openapi)).href
    const fetched = yield* Effect.tryPromise({
      try: async (signal): Promise<{ readonly text: string } | { readonly problem: string }> => {
        if (isFile) return { text: await readFile(fileURLToPath(url), { encoding: "utf8", signal }) }
        const response = await sendOnWire({
          method: "GET",
          url,
          headers: { accept: "application/json" },
          signal: AbortSignal.any([signal, AbortSignal.timeout(DOCUMENT_TIMEOUT_MILLIS)])
        })
        return response.status >= 200 && response.status < 300
          ? { text: response.text }
          : { problem: `GET ${url} answered ${response.status}` }
      },
      catch: (error) =>
        `${isFile ? `cannot read ${url}` : `GET ${url} gave no answer`}: ${
          error instanceof Error ? error.message : String(error)
        }`
    }).pipe(
      Effect.map((read): { readonly document: unknown } | { readonly problem: string } => {
        if ("problem" in read) return read
        try {
          return { document: JSON.parse(read.text) as unknown }
        } catch {
          return { problem: `${url} is not JSON` }
        }
      }),
      Effect.catch((problem) => Effect.succeed({ problem }))
    )
    const unusable = (problem: string) =>
      none(
        explicit
          ? Effect.fail(
            new CheckFailed({
              request: `GET ${url}`,
              expected: "the OpenAPI document given with --openapi",
              received: problem
            })
          )
          : Effect.fail(skipped(`${problem}: give the deployment's document with --openapi URL`))
      )
    if ("problem" in fetched) return unusable(fetched.problem)
    const validator = yield* Effect.try(() => makeDocumentValidator(fetched.document, baseUrl)).pipe(
      Effect.catch(() => Effect.succeed(undefined))
    )
    if (validator === undefined) return unusable(`${url} is not an OpenAPI document with paths`)
    const observer = makeDocumentObserver(validator)
    const { paths } = fetched.document as { readonly paths?: Record<string, unknown> }
    return {
      url,
      paths: Object.keys(paths ?? {}),
      webhookPayload: makeWebhookPayloadValidator(fetched.document),
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
