/** An answer as the suites look at it: status, headers, the body as text and, when it is JSON, parsed. */
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

/** One request with fetch, its whole answer read. */
export const send = async (url: string, init: RequestInit = {}): Promise<Answer> => {
  const response = await fetch(url, init)
  const text = await response.text()
  let body: unknown = undefined
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: response.status, headers: response.headers, body, text }
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
export const json = (key: string) => ({ ...bearer(key), "content-type": "application/json" })
