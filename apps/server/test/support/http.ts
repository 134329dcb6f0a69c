import type { Answer } from "@petstore/test-support"
import { expect } from "vitest"
import { type RawRequest, rawRequest } from "./rawHttp.ts"

/** For what fetch refuses to send (TRACE, raw bytes): one exchange over node:http, as an Answer. */
export const sendRaw = async (origin: string, request: RawRequest): Promise<Answer> => {
  const answer = await rawRequest(origin, request)
  if (answer.kind !== "response") throw new Error(`${request.method} ${request.path}: ${answer.code} ${answer.message}`)
  const headers = new Headers()
  for (const [name, value] of Object.entries(answer.headers)) {
    for (const one of typeof value === "string" ? [value] : value ?? []) headers.append(name, one)
  }
  return { status: answer.status, headers, body: answer.body, text: answer.text }
}

/**
 * Asserts the documented Error shape: exactly code, message and status (details only on a 400), and the
 * request's id, equal to the answer's `X-Request-Id`.
 */
export const expectError = (answer: Answer, status: number, code: string) => {
  expect(answer.status, answer.text).toBe(status)
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
  const allowed = status === 400
    ? ["code", "details", "message", "requestId", "status"]
    : ["code", "message", "requestId", "status"]
  expect(answer.body.requestId, answer.text).toBe(answer.headers.get("x-request-id"))
  for (const key of Object.keys(answer.body)) expect(allowed).toContain(key)
  expect(answer.body.code).toBe(code)
  expect(answer.body.status).toBe(status)
  expect(typeof answer.body.message).toBe("string")
  expect(answer.body.message.length).toBeGreaterThan(0)
}
