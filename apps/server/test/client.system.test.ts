import {
  Forbidden,
  InvalidTransition,
  NotFound,
  PetNotAvailable,
  PetstoreClient,
  PreconditionFailed,
  Unauthorized
} from "@petstore/contract"
import { Effect, Option, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  createTestDatabase,
  postgresAdminUrl,
  runScript,
  type StartedProcess,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"

/** The example of packages/contract/README.md (a test there checks that the README shows this very file). */
const quickstart = fileURLToPath(new URL("../../../packages/contract/examples/quickstart.ts", import.meta.url))

const runQuickstart = (env: Record<string, string>) => runScript(quickstart, [], env)

describeOnEachBackend("the typed client against a server process", ({ name }) => {
  let started: StartedProcess
  let database: TestDatabase | undefined
  let apiKey: string

  const run = <A, E>(effect: Effect.Effect<A, E, PetstoreClient>, key = apiKey) =>
    Effect.runPromise(effect.pipe(
      Effect.provide(PetstoreClient.layer({ baseUrl: `${started.origin}/v1`, apiKey: key })),
      Effect.provide(FetchHttpClient.layer)
    ))

  beforeAll(async () => {
    database = name === "postgres" ? await createTestDatabase(postgresAdminUrl!) : undefined
    started = await startServerProcess(
      database === undefined ? { DATA_DIR: ":memory:" } : { DATABASE_URL: database.url }
    )
    // Enough quota for every test here; the quotas themselves are tested elsewhere.
    apiKey = await started.createKey("enterprise", { perMinute: 10_000, perDay: 100_000 })
  })
  afterAll(async () => {
    await started?.server.stop()
    await database?.drop()
  })

  // First, on an empty store, so that the example's output is known to the line.
  it("runs the README's example: a plain-object create, a page and its successor, every pet", async () => {
    await run(Effect.gen(function*() {
      const petstore = yield* PetstoreClient
      yield* petstore.createPet({ name: "Ada", categoryId: 2, status: "pending" })
      yield* petstore.createPet({ name: "Bo", categoryId: 2 })
    }))
    const outcome = await runQuickstart({ PETSTORE_URL: `${started.origin}/v1`, PETSTORE_API_KEY: apiKey })
    expect(outcome.stderr).toBe("")
    expect(outcome.code).toBe(0)
    const rexId = /^created Rex: id (\d+), available$/m.exec(outcome.stdout)?.[1]
    expect(outcome.stdout.trim().split("\n")).toEqual([
      `created Rex: id ${rexId}, available`,
      "first page: 2 pets, more to follow: true",
      `second page starts at id ${rexId}`,
      "available: Bo, Rex"
    ])
  })

  it("creates from a plain object: status defaults to available, the name is trimmed", async () => {
    const pet = await run(
      Effect.flatMap(PetstoreClient, (petstore) => petstore.createPet({ name: "  Tom  ", categoryId: 1 }))
    )
    expect(pet).toEqual({ id: expect.any(Number), name: "Tom", categoryId: 1, status: "available" })
  })

  it("lists without a limit: 20 pets, and a cursor that continues after the last one", async () => {
    await run(Effect.flatMap(PetstoreClient, (petstore) =>
      Effect.forEach(
        Array.from({ length: 25 }, (_, i) => ({ name: `Filler ${i}`, categoryId: 5 })),
        (pet) => petstore.createPet(pet),
        { concurrency: 4 }
      )))
    const [first, second] = await run(Effect.gen(function*() {
      const petstore = yield* PetstoreClient
      const first = yield* petstore.listPets()
      const second = yield* petstore.listPets({ cursor: Option.getOrThrow(first.next) })
      return [first, second] as const
    }))
    expect(first.pets).toHaveLength(20)
    expect(second.pets[0]!.id).toBeGreaterThan(first.pets.at(-1)!.id)
  })

  it("walks every page: each matching pet once, in ascending id order", async () => {
    const created = await run(Effect.flatMap(PetstoreClient, (petstore) =>
      Effect.forEach(
        Array.from({ length: 45 }, (_, i) => ({ name: `Sold ${i}`, categoryId: 9, status: "sold" as const })),
        (pet) => petstore.createPet(pet),
        { concurrency: 4 }
      )))
    const ids = created.map((pet) => pet.id).sort((a, b) => a - b)
    // Without a limit the server pages by 20, with one by 7: three pages, then seven.
    for (const query of [{ status: "sold" as const }, { status: "sold" as const, limit: 7 }]) {
      const walked = await run(Effect.flatMap(PetstoreClient, (petstore) => Stream.runCollect(petstore.allPets(query))))
      expect(walked.map((pet) => pet.id)).toEqual(ids)
    }
  })

  it("replays a create retried with the same idempotency key", async () => {
    const [first, retry] = await run(Effect.gen(function*() {
      const petstore = yield* PetstoreClient
      const pet = { name: "Once", categoryId: 4 }
      const first = yield* petstore.createPet(pet, { idempotencyKey: "client-test-once" })
      const retry = yield* petstore.createPet(pet, { idempotencyKey: "client-test-once" })
      return [first, retry] as const
    }))
    expect(retry).toEqual(first)
  })

  it("fails with the contract's error classes: NotFound, Unauthorized", async () => {
    const missing = await run(Effect.flip(Effect.flatMap(PetstoreClient, (petstore) => petstore.getPet(999_999_999))))
    expect(missing).toBeInstanceOf(NotFound)
    const unknownKey = await run(
      Effect.flip(Effect.flatMap(PetstoreClient, (petstore) => petstore.listPets())),
      "psk_not-a-key-of-this-server"
    )
    expect(unknownKey).toBeInstanceOf(Unauthorized)
  })

  it("refuses input the contract refuses, with a SchemaError naming the field", async () => {
    const blank = await run(
      Effect.flip(Effect.flatMap(PetstoreClient, (petstore) => petstore.createPet({ name: "   ", categoryId: 1 })))
    )
    expect(Schema.isSchemaError(blank)).toBe(true)
    expect(String(blank)).toMatch(/name/)
    const tooMany = await run(
      Effect.flip(Effect.flatMap(PetstoreClient, (petstore) => petstore.listPets({ limit: 101 })))
    )
    expect(Schema.isSchemaError(tooMany)).toBe(true)
  })

  it("orders a pet and moves the order (beta): place, read, list, cancel; deliver and delete with a staff key", async () => {
    const admin = await fetch(`${started.admin}/admin/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ plan: "enterprise", limits: { perMinute: 10_000, perDay: 100_000 }, role: "staff" })
    })
    const staffKey = ((await admin.json()) as { key: string }).key
    const result = await run(Effect.gen(function*() {
      const petstore = yield* PetstoreClient
      const pet = yield* petstore.createPet({ name: "Client", categoryId: 1 })
      const order = yield* petstore.placeOrder({ petId: pet.id }, { idempotencyKey: `client-${pet.id}` })
      const replayed = yield* petstore.placeOrder({ petId: pet.id }, { idempotencyKey: `client-${pet.id}` })
      const again = yield* Effect.flip(petstore.placeOrder({ petId: pet.id }))
      const read = yield* petstore.getOrder(order.id)
      const listed = yield* Stream.runCollect(petstore.allOrders({ status: "placed" }))
      const cancelled = yield* petstore.cancelOrder(order.id)
      const twice = yield* Effect.flip(petstore.cancelOrder(order.id))
      const notStaff = yield* Effect.flip(petstore.deletePet(pet.id))
      const { pet: renamed, etag } = yield* petstore.updatePet(pet.id, { name: "Renamed" })
      const stale = yield* Effect.flip(petstore.updatePet(pet.id, { name: "Stale" }, { ifMatch: `"${pet.id}.1"` }))
      return { pet, order, replayed, again, read, listed, cancelled, twice, notStaff, renamed, etag, stale }
    }))
    expect(result.order).toMatchObject({ petId: result.pet.id, status: "placed" })
    expect(result.replayed).toEqual(result.order)
    expect(result.again).toBeInstanceOf(PetNotAvailable)
    expect(result.read).toEqual(result.order)
    expect(result.listed.map((order) => order.id)).toContain(result.order.id)
    expect(result.cancelled.status).toBe("cancelled")
    expect(result.twice).toBeInstanceOf(InvalidTransition)
    expect(result.notStaff).toBeInstanceOf(Forbidden)
    expect(result.renamed.name).toBe("Renamed")
    expect(result.etag).toMatch(new RegExp(`^"${result.pet.id}\\.\\d+"$`))
    expect(result.stale).toBeInstanceOf(PreconditionFailed)

    const staff = await run(
      Effect.gen(function*() {
        const petstore = yield* PetstoreClient
        const order = yield* petstore.placeOrder({ petId: result.pet.id })
        const delivered = yield* petstore.deliverOrder(order.id)
        yield* petstore.deletePet(result.pet.id)
        const gone = yield* Effect.flip(petstore.getOrder(987654321))
        return { delivered, gone }
      }),
      staffKey
    )
    expect(staff.delivered.status).toBe("delivered")
    expect(staff.gone).toBeInstanceOf(NotFound)
  })
})
