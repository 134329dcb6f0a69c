import { expect } from "vitest"

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
  readonly text: string
}

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

/** Asserts the documented Error shape: exactly code, message and status (details only on a 400). */
export const expectError = (answer: Answer, status: number, code: string) => {
  expect(answer.status, answer.text).toBe(status)
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
  const allowed = status === 400 ? ["code", "details", "message", "status"] : ["code", "message", "status"]
  for (const key of Object.keys(answer.body)) expect(allowed).toContain(key)
  expect(answer.body.code).toBe(code)
  expect(answer.body.status).toBe(status)
  expect(typeof answer.body.message).toBe("string")
  expect(answer.body.message.length).toBeGreaterThan(0)
}
