/**
 * Committed events survive the failures of a real server process: a SIGKILL
 * while deliveries are in flight, and a PostgreSQL outage while they are. Each
 * committed event reaches the receiver with a 2xx (a duplicate only for a
 * delivery the failure interrupted, with the same webhook-id), and no event is
 * delivered that the store does not have.
 *
 * A delivery interrupted before its outcome is recorded is claimed again when
 * its lease (30 s) ends: the one wait here that is not a poll of progress.
 */
import { once } from "node:events"
import type { ServerResponse } from "node:http"
import { describe, expect, it } from "vitest"
import {
  bearer,
  createTestDatabase,
  postgresAdminUrl,
  send,
  type StartedProcess,
  startServerProcess,
  startWebhookReceiver,
  type TestDatabase
} from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"
import { waitFor } from "./support/waitFor.ts"
import { freshDatabaseBehindProxy } from "./support/tcpProxy.ts"
import { undoAfterEach } from "./support/undo.ts"

const WEBHOOK_ENV = { WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true" }
const PETS = 20
const DELIVERY_BOUND_MS = 120_000

const cleanup = undoAfterEach()

const json = { "content-type": "application/json" }

/** A staff key (it sees every event) and its endpoint at the receiver, registered through `server`. */
const register = async (server: StartedProcess, url: string) => {
  const key = await server.createKey("enterprise", { perMinute: 100_000, perDay: 1_000_000 }, "staff")
  const created = await send(`${server.origin}/v1/webhooks/endpoints`, {
    method: "POST",
    headers: { ...bearer(key), ...json },
    body: JSON.stringify({ url, eventTypes: ["pet.created"] })
  })
  expect(created.status, created.text).toBe(201)
  return key
}

const createPets = async (server: StartedProcess, key: string) => {
  for (let i = 0; i < PETS; i++) {
    const answer = await send(`${server.origin}/v1/pets`, {
      method: "POST",
      headers: { ...bearer(key), ...json },
      body: JSON.stringify({ name: `Durable ${i}`, categoryId: 1 })
    })
    expect(answer.status, answer.text).toBe(201)
  }
}

/** Every pet.created event the store has, by id. */
const storedEventIds = async (server: StartedProcess, key: string) => {
  const answer = await send(`${server.origin}/v1/events?type=pet.created&limit=100`, { headers: bearer(key) })
  expect(answer.status, answer.text).toBe(200)
  return (answer.body as Array<{ id: string }>).map((event) => event.id).sort()
}

describe("webhook deliveries through process failures", needsPostgres, () => {
  it("a SIGKILL during delivery loses no committed event: another process delivers what was in flight, with the same webhook-id", async () => {
    const database: TestDatabase = await createTestDatabase(postgresAdminUrl!)
    cleanup.push(() => database.drop())
    const receiver = await startWebhookReceiver()
    cleanup.push(() => receiver.close())
    // The first process's deliveries hang: they are in flight when it is killed.
    const held: Array<ServerResponse> = []
    let answering = false
    const delivered = new Set<string>()
    receiver.answerWith((webhook, response) => {
      if (!answering) return void held.push(response)
      delivered.add(String(webhook.headers["webhook-id"]))
      response.writeHead(204).end()
    })
    const first = await startServerProcess({ DATABASE_URL: database.url, ...WEBHOOK_ENV })
    cleanup.push(() => first.server.stop())
    const key = await register(first, receiver.url)
    await createPets(first, key)
    await waitFor(() => held.length > 0, "a delivery in flight")
    const exited = once(first.server.child, "exit")
    first.server.child.kill("SIGKILL")
    await exited
    for (const response of held) response.destroy()
    answering = true

    const second = await startServerProcess({ DATABASE_URL: database.url, ...WEBHOOK_ENV })
    cleanup.push(() => second.server.stop())
    const stored = await storedEventIds(second, key)
    expect(stored).toHaveLength(PETS)
    await waitFor(() => stored.every((id) => delivered.has(id)), "every committed event delivered", DELIVERY_BOUND_MS)
    expect([...delivered].sort()).toEqual(stored)
  })

  it("a PostgreSQL outage during delivery loses no committed event", async () => {
    const { proxy, url: throughProxy } = await freshDatabaseBehindProxy(cleanup)
    const receiver = await startWebhookReceiver()
    cleanup.push(() => receiver.close())
    const held: Array<{ id: string; response: ServerResponse }> = []
    let holding = true
    const delivered = new Set<string>()
    receiver.answerWith((webhook, response) => {
      const id = String(webhook.headers["webhook-id"])
      if (holding) return void held.push({ id, response })
      delivered.add(id)
      response.writeHead(200).end()
    })
    const server = await startServerProcess({ DATABASE_URL: throughProxy, ...WEBHOOK_ENV })
    cleanup.push(() => server.server.stop())
    cleanup.push(() => proxy.resume())
    const key = await register(server, receiver.url)
    await createPets(server, key)
    await waitFor(() => held.length > 0, "a delivery in flight")
    // The database goes away while deliveries are in flight; the receiver answers them meanwhile, and the
    // server cannot record that it did.
    await proxy.cut("refuse")
    holding = false
    for (const { id, response } of held) {
      delivered.add(id)
      response.writeHead(200).end()
    }
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    await proxy.resume()

    const stored = await storedEventIdsEventually(server, key)
    expect(stored).toHaveLength(PETS)
    await waitFor(() => stored.every((id) => delivered.has(id)), "every committed event delivered", DELIVERY_BOUND_MS)
    expect([...delivered].sort()).toEqual(stored)
  })
})

/** After an outage the server answers 503 until its pool reconnects: ask until it answers. */
const storedEventIdsEventually = async (server: StartedProcess, key: string) => {
  const deadline = Date.now() + 60_000
  for (;;) {
    const answer = await send(`${server.origin}/v1/events?type=pet.created&limit=100`, { headers: bearer(key) })
    if (answer.status === 200) return (answer.body as Array<{ id: string }>).map((event) => event.id).sort()
    if (Date.now() > deadline) throw new Error(`events still unavailable: ${answer.status} ${answer.text}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}
