// @ts-check
/**
 * Where the walks of events.js go next: the first page, the resume point a walk keeps (the last
 * `Link: rel="next"` it was given: the log's last page has none), and the walk by type from an earlier resume
 * point. Plain functions, evaluated under Node by test/paging.test.ts.
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
 * What setup hands the VUs: where the log ended when the run started. `null`, never `undefined`, when the
 * whole log fitted on one page, so every k6 release passes the same thing.
 * @param {string | undefined} start the last `Link` the walk to the log's end was given
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
 * A key's walk position: the last `Link` it was given, and the ids seen on pages since it.
 * @typedef {object} WalkCursor
 * @property {string | undefined} resume
 * @property {Record<string, boolean>} sinceResume
 */

/**
 * @param {unknown} start where the walks start (setup's)
 * @returns {WalkCursor}
 */
export function newCursor(start) {
  return { resume: resumePoint(start), sinceResume: {} }
}

/**
 * After a page: a next page moves the resume point there and forgets the ids seen since the last one.
 * @param {WalkCursor} cursor
 * @param {string | undefined} next the page's `rel="next"`
 * @returns {string | undefined} the next request of the walk, or undefined when the walk reached the end
 */
export function advance(cursor, next) {
  const target = resumePoint(next)
  if (target === undefined) return undefined
  cursor.resume = target
  cursor.sinceResume = {}
  return target
}

/**
 * An event of a page, unless the cursor saw it on an earlier walk since its resume point (the walk starts
 * again at that page): the ids to look at, each once.
 * @param {WalkCursor} cursor
 * @param {string} id
 * @returns {boolean} whether the event is new to this cursor
 */
export function firstSighting(cursor, id) {
  if (cursor.sinceResume[id]) return false
  cursor.sinceResume[id] = true
  return true
}
