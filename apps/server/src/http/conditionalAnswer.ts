import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { negotiatedEncoding, type Representation } from "./compression.ts"

/** The docs change only with a deployment: caches may keep them a few minutes, then revalidate (a 304 is cheap). */
const CACHE_CONTROL = "public, max-age=300"

/** Whether `If-None-Match` names the validator (weak comparison, RFC 9110 §13.1.2), or is `*`. */
const matchesNoneOf = (ifNoneMatch: string | undefined, etag: string) =>
  ifNoneMatch !== undefined &&
  (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag))

/** The representation the request asks for: 304 when its validator is current, else the bytes. */
export const answer = (representation: Representation, request: HttpServerRequest.HttpServerRequest) => {
  const coding = negotiatedEncoding(request.headers["accept-encoding"])
  return Effect.map(representation.encoded[coding], ({ body, etag }) => {
    const headers: Record<string, string> = {
      etag,
      vary: "Accept-Encoding",
      "cache-control": CACHE_CONTROL,
      "x-content-type-options": "nosniff",
      ...(coding === "identity" ? {} : { "content-encoding": coding })
    }
    return matchesNoneOf(request.headers["if-none-match"], etag)
      ? HttpServerResponse.empty({ status: 304, headers })
      : HttpServerResponse.uint8Array(body, { headers, contentType: representation.contentType })
  })
}
