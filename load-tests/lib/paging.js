// @ts-check
/**
 * Reading `GET /v1/events` as a poller does (README "Events and webhooks"): follow the `Link: rel="next"` of
 * every page. Every page has one: after its last event, or, on an empty page at the end of the log, the same
 * query again. A page with fewer events than asked for is the end of the log for now: wait, then follow its
 * link. Plain ES2017, for k6 (no `URL` there) and for the vitest tests beside the scripts.
 */

/**
 * @param {string} url
 * @returns {string[]} the query's parameters, `name=value`, sorted: their order does not matter to the server
 */
export function queryParameters(url) {
  const hash = url.indexOf("#")
  const target = hash < 0 ? url : url.slice(0, hash)
  const question = target.indexOf("?")
  if (question < 0) return []
  return target.slice(question + 1).split("&").filter((part) => part !== "").sort()
}

/**
 * @param {string} a
 * @param {string} b
 * @returns {boolean} whether both URLs ask for the same page: the same query, whatever the origin or order
 */
export function sameQuery(a, b) {
  const pa = queryParameters(a)
  const pb = queryParameters(b)
  return pa.length === pb.length && pa.every((part, i) => part === pb[i])
}

/**
 * @param {string} url
 * @param {string} name
 * @returns {string | undefined} the parameter's value as sent (not decoded)
 */
export function parameter(url, name) {
  const prefix = `${name}=`
  const found = queryParameters(url).filter((part) => part.indexOf(prefix) === 0)[0]
  return found === undefined ? undefined : found.slice(prefix.length)
}

/**
 * @typedef {object} NextRead where a poller reads next, after a page
 * @property {string} url the page's `rel="next"` link
 * @property {boolean} atEnd the page was the end of the log for now: wait before following the link
 */

/**
 * Where to read after a page of the feed.
 * @param {number} count events the page returned
 * @param {number} limit events asked for
 * @param {string | undefined} next the page's `rel="next"` URL
 * @returns {NextRead | undefined} undefined when the page has no link, which the service never answers
 */
export function readOn(count, limit, next) {
  return next === undefined ? undefined : { url: next, atEnd: count < limit }
}

/**
 * @param {string} url the page read
 * @param {number} count events it returned
 * @param {string | undefined} next its `rel="next"` URL
 * @returns {boolean} whether the link is what the service promises: the same filter and limit, a cursor once
 *   there is a position to read on from, and on an empty page the same query again
 */
export function linksOnAsPromised(url, count, next) {
  if (next === undefined) return false
  if (parameter(next, "limit") !== parameter(url, "limit") || parameter(next, "type") !== parameter(url, "type")) {
    return false
  }
  if (count === 0) return sameQuery(url, next)
  const cursor = parameter(next, "cursor")
  return cursor !== undefined && /^[A-Za-z0-9_-]+$/.test(cursor) && cursor !== parameter(url, "cursor")
}
