/** An answer as the suites look at it: status, headers, the body as text and, when it is JSON, parsed. */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

/** A body parsed as JSON, or undefined when it is empty or not JSON. */
export const parseJsonBody = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** One request with fetch, its whole answer read. */
export const send = async (url: string, init: RequestInit = {}): Promise<Answer> => {
  const response = await fetch(url, init)
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: parseJsonBody(text), text }
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
export const json = (key: string) => ({ ...bearer(key), "content-type": "application/json" })
