// @ts-check
/**
 * Where the walks of events.js go: the first page, the resume point a walk keeps (the last page's
 * `Link: rel="next"`), and the walk by type from an earlier resume point. Plain functions, evaluated under Node
 * by test/paging.test.ts.
 *
 * `setup`'s return reaches the VUs through JSON: k6 serialises it, so a field that was `undefined` arrives
 * missing on some k6 releases and `null` on others. A resume point is a string or nothing, whatever came.
 */

/**
 * @param {number} pageSize
 * @returns {string} the first page of the key's events, under BASE_URL
 */
export function firstEventsPage(pageSize) {
  return `/events?limit=${pageSize}`
}

/**
 * @param {unknown} value a resume point, as setup's data or a Link gave it
 * @returns {string | undefined} the resume point, or undefined when there is none (missing, null, empty)
 */
export function resumePoint(value) {
  return typeof value === "string" && value !== "" ? value : undefined
}

/**
 * What setup hands the VUs: where the log ended when the run started. `null`, never `undefined`, when there is
 * none, so every k6 release passes the same thing.
 * @param {string | undefined} start the link of the end of the log
 * @returns {{ start: string | null }}
 */
export function setupData(start) {
  return { start: resumePoint(start) === undefined ? null : String(start) }
}

/**
 * @param {unknown} data setup's return, as a VU receives it
 * @returns {string | undefined} where every key's first walk starts
 */
export function startFromSetup(data) {
  return data !== null && typeof data === "object"
    ? resumePoint(/** @type {{ start?: unknown }} */ (data).start)
    : undefined
}

/**
 * @param {string | undefined} resume where the key's walks start
 * @param {number} pageSize
 * @returns {string} the first request of a walk
 */
export function walkStart(resume, pageSize) {
  const from = resumePoint(resume)
  return from === undefined ? firstEventsPage(pageSize) : from
}

/**
 * @param {unknown} from a resume point of an earlier walk, or nothing for the beginning of the log
 * @param {number} pageSize
 * @param {string} type an event type
 * @returns {string} the first request of a walk of that type alone from there
 */
export function typeWalkStart(from, pageSize, type) {
  const resume = resumePoint(from)
  const filter = `type=${encodeURIComponent(type)}`
  return resume === undefined ? `${firstEventsPage(pageSize)}&${filter}` : `${resume}&${filter}`
}

/**
 * Reading `GET /v1/events` as a poller does (README "Events and webhooks"): follow the `Link: rel="next"` of
 * every page. Every page has one: after its last event, or, on an empty page at the end of the log, the same
 * query again. A page with fewer events than asked for is the end of the log for now: wait, then follow its
 * link. Plain ES2017, for k6 (no `URL` there).
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
