import { afterAll, beforeAll, expect, it } from "vitest"
import { bearer, json, send } from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"
import { expectError } from "./support/http.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"

describeOnEachBackend("Idempotency-Key on POST /v1/pets", ({ name }) => {
  let server: RunningServer
  let key: string
  let run = 0
  const create = (body: unknown, idempotencyKey?: string, apiKey = key) =>
    send(`${server.baseUrl}/pets`, {
      method: "POST",
      headers: { ...json(apiKey), ...(idempotencyKey !== undefined ? { "idempotency-key": idempotencyKey } : {}) },
      body: JSON.stringify(body)
    })
  const countPets = async (petName: string) => {
    const all = await send(`${server.baseUrl}/pets?limit=100`, { headers: bearer(key) })
    return all.body.filter((pet: { name: string }) => pet.name === petName).length
  }
  const fresh = () => `idem-${name}-${++run}-${Date.now()}`

  beforeAll(async () => {
    server = await startServer(name)
    key = (await server.createKey("business")).key
  })
  afterAll(() => server?.stop())

  it("a retry with the same key and body returns the original answer, marked as a replay, and creates nothing", async () => {
    const idem = fresh()
    const first = await create({ name: idem, categoryId: 1 }, idem)
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const retry = await create({ categoryId: 1, name: idem }, idem)
    expect(retry.status).toBe(201)
    expect(retry.body).toEqual(first.body)
    expect(retry.headers.get("location")).toBe(first.headers.get("location"))
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(await countPets(idem)).toBe(1)
  })

  it("accepts the key quoted or bare, as the same key", async () => {
    const idem = fresh()
    const bare = await create({ name: idem, categoryId: 2 }, idem)
    const quoted = await create({ name: idem, categoryId: 2 }, `"${idem}"`)
    expect(quoted.body.id).toBe(bare.body.id)
    expect(quoted.headers.get("idempotent-replayed")).toBe("true")
  })

  it("refuses the same key with a different body: 422 idempotency_key_reused", async () => {
    const idem = fresh()
    await create({ name: idem, categoryId: 1 }, idem)
    expectError(await create({ name: idem, categoryId: 2 }, idem), 422, "idempotency_key_reused")
    expect(await countPets(idem)).toBe(1)
  })

  it("a retry sent while the first is still in flight gets 409, and exactly one pet is created", async () => {
    const idem = fresh()
    const answers = await Promise.all(Array.from({ length: 8 }, () => create({ name: idem, categoryId: 3 }, idem)))
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true)
    for (const answer of answers.filter((answer) => answer.status === 409)) {
      expectError(answer, 409, "idempotency_key_in_flight")
    }
    const ids = new Set(answers.filter((answer) => answer.status === 201).map((answer) => answer.body.id))
    expect(ids.size).toBe(1)
    expect(await countPets(idem)).toBe(1)
  })

  it("scopes keys to the API key: another key with the same value creates its own pet", async () => {
    const idem = fresh()
    const other = (await server.createKey("business")).key
    const mine = await create({ name: idem, categoryId: 4 }, idem)
    const theirs = await create({ name: idem, categoryId: 4 }, idem, other)
    expect(theirs.status).toBe(201)
    expect(theirs.body.id).not.toBe(mine.body.id)
    expect(theirs.headers.get("idempotent-replayed")).toBeNull()
  })

  it.each(["", "\"\"", "x".repeat(256)])("refuses the malformed key %j with 400", async (idem) => {
    const answer = await create({ name: "Bad key", categoryId: 1 }, idem)
    expectError(answer, 400, "invalid_request")
    expect(answer.body.details[0].path).toBe("header.idempotency-key")
  })

  it("without a key, two identical creates make two pets", async () => {
    const petName = fresh()
    await create({ name: petName, categoryId: 1 })
    await create({ name: petName, categoryId: 1 })
    expect(await countPets(petName)).toBe(2)
  })
})
