import { InvalidRequest } from "@petstore/contract"
import { Effect, Option } from "effect"

/**
 * A cursor is the last id of the previous page, base64url-encoded so that
 * clients treat it as opaque and the encoding can change without breaking them.
 */
export const encodeCursor = (afterId: number) => Buffer.from(`after:${afterId}`).toString("base64url")

const CURSOR = /^after:([1-9][0-9]{0,15})$/

export const decodeCursor = (cursor: string | undefined) => {
  if (cursor === undefined) return Effect.succeed(0)
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  const afterId = match ? Number(match[1]) : Number.NaN
  return Number.isSafeInteger(afterId) && /^[A-Za-z0-9_-]+$/.test(cursor)
    ? Effect.succeed(afterId)
    : Effect.fail(
      new InvalidRequest({
        message: "Invalid request query. query.cursor: not a cursor this service issued",
        details: [{ path: "query.cursor", message: "not a cursor this service issued" }]
      })
    )
}

/**
 * The headers of a page of `GET /v1/pets` (or of another list at `path`,
 * `GET /v1/store/orders`): when more items follow, a `Link` to the next page,
 * the same query continued after this page's last item. `absolute` turns the
 * path into the URL clients use (`PublicUrl`).
 */
export const pageHeaders = (
  nextAfter: Option.Option<number>,
  query: { readonly limit: number; readonly status: string | undefined },
  absolute: (path: string) => string,
  path = "/v1/pets"
): { readonly link?: string } =>
  Option.match(nextAfter, {
    onNone: () => ({}),
    onSome: (afterId) => {
      const params = new URLSearchParams({ limit: String(query.limit) })
      if (query.status !== undefined) params.set("status", query.status)
      params.set("cursor", encodeCursor(afterId))
      return { link: `<${absolute(`${path}?${params}`)}>; rel="next"` }
    }
  })
