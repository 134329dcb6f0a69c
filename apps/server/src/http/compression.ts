import { Effect } from "effect"
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants as zlibConstants, gzip } from "node:zlib"

/**
 * A document served in every coding a client may ask for (br, gzip, identity), each with its own strong
 * validator; and which of them `Accept-Encoding` asks for.
 */

/**
 * A document as it is served: its bytes with a strong validator per encoding. The compressed copies are made on
 * the first request that asks for each, once per process: most processes are never asked for the docs at all.
 */
export interface Representation {
  readonly contentType: string
  readonly encoded: { readonly [E in Encoding]: Effect.Effect<EncodedBody> }
}

export interface EncodedBody {
  readonly body: Uint8Array
  readonly etag: string
}

export type Encoding = "br" | "gzip" | "identity"

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/** Compressed in the thread pool, so a first visit does not stall other requests. */
export const represent = (body: Uint8Array, contentType: string) =>
  Effect.gen(function*() {
    const digest = createHash("sha256").update(body).digest("base64url").slice(0, 22)
    const compressed = (coding: "br" | "gzip", compress: () => Promise<Uint8Array>) =>
      Effect.cached(
        Effect.promise(compress).pipe(Effect.map((bytes) => ({ body: bytes, etag: `"${digest}-${coding}"` })))
      )
    return {
      contentType,
      encoded: {
        identity: Effect.succeed({ body, etag: `"${digest}"` }),
        gzip: yield* compressed("gzip", () => gzipAsync(body, { level: zlibConstants.Z_BEST_COMPRESSION })),
        br: yield* compressed("br", () =>
          brotliAsync(body, {
            params: {
              [zlibConstants.BROTLI_PARAM_QUALITY]: 9,
              [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
              [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length
            }
          }))
      }
    } satisfies Representation
  })

/**
 * The coding `Accept-Encoding` prefers among br, gzip and identity (RFC 9110 §12.5.3): the highest
 * q-value, br before gzip before identity on a tie; `*` stands for those not named; identity is acceptable
 * unless refused by name or by `*;q=0`, and is the answer when nothing else is.
 */
export const negotiatedEncoding = (acceptEncoding: string | undefined): Encoding => {
  if (acceptEncoding === undefined) return "identity"
  const weights = new Map<string, number>()
  for (const part of acceptEncoding.split(",")) {
    const [coding, ...parameters] = part.split(";").map((piece) => piece.trim().toLowerCase())
    if (!coding) continue
    const q = parameters.find((parameter) => parameter.startsWith("q="))
    const weight = q === undefined ? 1 : Number(q.slice(2))
    weights.set(coding, Number.isFinite(weight) && weight >= 0 && weight <= 1 ? weight : 0)
  }
  const weightOf = (coding: Encoding) => weights.get(coding) ?? weights.get("*") ?? (coding === "identity" ? 1 : 0)
  let best: Encoding = "identity"
  let bestWeight = 0
  for (const coding of ["br", "gzip", "identity"] as const) {
    const weight = weightOf(coding)
    if (weight > bestWeight) [best, bestWeight] = [coding, weight]
  }
  return best
}
