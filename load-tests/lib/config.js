// @ts-check
/**
 * Reading the scripts' configuration from the environment (`k6 run -e NAME=value …` or the shell's environment).
 * Every reader fails loudly on a value it cannot use, so a typo stops the run before any traffic is sent.
 */

/** The documented plans and their quotas (README "Quotas"). */
export const PLANS = {
  free: { perMinute: 60, perDay: 1000 },
  pro: { perMinute: 300, perDay: 10000 },
  business: { perMinute: 1000, perDay: 100000 }
}

/** @typedef {keyof typeof PLANS} PlanName */

/**
 * @param {string} name
 * @returns {string | undefined} the variable's value, or undefined when unset or blank
 */
export function envString(name) {
  const value = __ENV[name]
  return value === undefined || value.trim() === "" ? undefined : value.trim()
}

/**
 * @param {string} name
 * @returns {string}
 */
export function requireEnv(name) {
  const value = envString(name)
  if (value === undefined) throw new Error(`${name} is required (see load-tests/README.md)`)
  return value
}

/**
 * @param {string} name
 * @param {number} fallback
 * @returns {number}
 */
export function envNumber(name, fallback) {
  const raw = envString(name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!isFinite(value)) throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`)
  return value
}

/**
 * @param {string} name
 * @param {number} fallback
 * @returns {number} a whole number ≥ 1
 */
export function envPositiveInt(name, fallback) {
  const value = envNumber(name, fallback)
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1, got ${value}`)
  return value
}

/**
 * Parses a k6-style duration: `90s`, `2m`, `1h30m`, `1m30s`, or a bare number of seconds.
 * @param {string} text
 * @returns {number | undefined} seconds, or undefined when the text is no duration
 */
export function parseDuration(text) {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text)
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g
  let seconds = 0
  let consumed = 0
  let match = re.exec(text)
  while (match !== null) {
    if (match.index !== consumed) return undefined
    const amount = Number(match[1])
    const unit = match[2]
    seconds += unit === "h" ? amount * 3600 : unit === "m" ? amount * 60 : unit === "s" ? amount : amount / 1000
    consumed = re.lastIndex
    match = re.exec(text)
  }
  return consumed === text.length && consumed > 0 ? seconds : undefined
}

/**
 * @param {string} name
 * @param {string} fallback
 * @returns {{ text: string, seconds: number }} the duration as k6 takes it (`text`) and in seconds
 */
export function envDuration(name, fallback) {
  const raw = envString(name) || fallback
  const seconds = parseDuration(raw)
  if (seconds === undefined) {
    throw new Error(`${name} must be a duration such as 90s, 5m or 1h30m, got ${JSON.stringify(raw)}`)
  }
  // k6 wants a unit; a bare number means seconds here.
  return { text: /^\d+(\.\d+)?$/.test(raw) ? `${raw}s` : raw, seconds }
}

/** @returns {string} BASE_URL without a trailing slash: the address of the API, `/v1` included. */
export function baseUrl() {
  const url = (envString("BASE_URL") || "http://localhost:8080/v1").replace(/\/+$/, "")
  if (!/^https?:\/\//.test(url)) {
    throw new Error(`BASE_URL must start with http:// or https://, got ${JSON.stringify(url)}`)
  }
  if (!/\/v1$/.test(url)) throw new Error(`BASE_URL must end in the version segment /v1, got ${JSON.stringify(url)}`)
  return url
}

/**
 * @param {string} url BASE_URL
 * @returns {string} the address the health endpoints hang off: BASE_URL without its `/v1`
 */
export function originOf(url) {
  return url.replace(/\/v1$/, "")
}

/**
 * The keys of API_KEYS (comma-separated), none when it is unset: `k6 inspect` shows a script's options without
 * keys, and `setup` refuses to run without them (requireKeys).
 * @returns {string[]}
 */
export function apiKeys() {
  return (envString("API_KEYS") || "").split(",").map((key) => key.trim()).filter((key) => key !== "")
}

/**
 * Throws (k6 exits 107, naming API_KEYS) when the run has no key to send with: `setup` calls it.
 * @param {string[]} keys from apiKeys
 */
export function requireKeys(keys) {
  if (keys.length === 0) {
    throw new Error("API_KEYS is required: one key or more, comma-separated (see load-tests/README.md)")
  }
}

/**
 * The MIX variable: percentages of list, create and get, `80,15,5` by default.
 * @returns {{ list: number, create: number, get: number }}
 */
export function trafficMix() {
  const raw = envString("MIX") || "80,15,5"
  const parts = raw.split(",").map((part) => Number(part.trim()))
  const [list, create, get] = parts
  if (
    parts.length !== 3 || list === undefined || create === undefined || get === undefined ||
    parts.some((part) => !isFinite(part) || part < 0) || list + create + get <= 0
  ) {
    throw new Error(
      `MIX must be three non-negative weights list,create,get such as 80,15,5, got ${JSON.stringify(raw)}`
    )
  }
  const total = list + create + get
  return { list: list / total, create: create / total, get: get / total }
}
