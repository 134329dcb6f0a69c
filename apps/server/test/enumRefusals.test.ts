/**
 * A value outside an enum is refused with the values the field may take, wherever the enum is: a query
 * parameter, a body field, an item of a body's list. The one place that words schema failures
 * (`RequestValidation.ts`) says so for every enum of the contract.
 */
import { EventType, PetStatus } from "@petstore/contract"
import { send } from "@petstore/test-support"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer } from "./support/testServer.ts"

describe("a refused enum value", () => {
  let server: RunningServer
  let key: string
  const authorized = () => ({ authorization: `Bearer ${key}` })
  const json = () => ({ ...authorized(), "content-type": "application/json" })

  beforeAll(async () => {
    server = await startServer("pglite")
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  const expectRefusal = (
    answer: { readonly status: number; readonly body: any; readonly headers: Headers },
    path: string,
    values: ReadonlyArray<string>
  ) => {
    const message = `Expected one of ${values.join(", ")}`
    expect(answer.status).toBe(400)
    expect(answer.body).toEqual({
      code: "invalid_request",
      status: 400,
      message: expect.stringContaining(`${path}: ${message}`),
      details: [{ path, message }],
      requestId: answer.headers.get("x-request-id")
    })
  }

  it("GET /v1/events?type=bogus names every event type", async () => {
    const answer = await send(`${server.baseUrl}/events?type=bogus`, { headers: authorized() })
    expectRefusal(answer, "query.type", EventType.literals)
  })

  it("GET /v1/pets?status=bogus names every pet status", async () => {
    const answer = await send(`${server.baseUrl}/pets?status=bogus`, { headers: authorized() })
    expectRefusal(answer, "query.status", PetStatus.literals)
  })

  it("GET /v1/store/orders?status=bogus names every order status", async () => {
    const answer = await send(`${server.baseUrl}/store/orders?status=bogus`, { headers: authorized() })
    expectRefusal(answer, "query.status", ["placed", "delivered", "cancelled"])
  })

  it("a body field and an item of a body's list name them too", async () => {
    const pet = await send(`${server.baseUrl}/pets`, {
      method: "POST",
      headers: json(),
      body: JSON.stringify({ name: "Rex", categoryId: 1, status: "adopted" })
    })
    expectRefusal(pet, "body.status", PetStatus.literals)
    const endpoint = await send(`${server.baseUrl}/webhooks/endpoints`, {
      method: "POST",
      headers: json(),
      body: JSON.stringify({ url: "https://receiver.example/hook", eventTypes: ["pet.created", "pet.adopted"] })
    })
    expectRefusal(endpoint, "body.eventTypes.1", EventType.literals)
  })
})
