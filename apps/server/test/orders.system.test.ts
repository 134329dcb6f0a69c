/**
 * The invariants of orders (README "Orders") after any interleaving of
 * concurrent creates, orders, cancels, deliveries, patches and deletes:
 * fast-check draws batches of commands, each batch sent at once, over the
 * keys of two customers and a staff member, and over several real server
 * processes on one PostgreSQL database (in-process on PGlite, which one
 * process owns). After each run the invariants are checked through the API
 * and, on PostgreSQL, with the invariant query.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  type Answer,
  apiViolations,
  bearer,
  createTestDatabase,
  json,
  postgresAdminUrl,
  send,
  sqlViolations,
  type StartedProcess,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"
import { describeOnEachBackend, needsPostgres } from "./support/databases.ts"
import { startServer } from "./support/testServer.ts"

type Command =
  | { readonly kind: "create"; readonly status: "available" | "pending" | "sold"; readonly via: number }
  | {
    readonly kind: "place"
    readonly pet: number
    readonly key: number
    readonly idempotent: boolean
    readonly via: number
  }
  | { readonly kind: "cancel"; readonly order: number; readonly key: number; readonly via: number }
  | { readonly kind: "deliver"; readonly order: number; readonly via: number }
  | {
    readonly kind: "patch"
    readonly pet: number
    readonly key: number
    readonly ifMatch: boolean
    readonly via: number
  }
  | { readonly kind: "delete"; readonly pet: number; readonly ifMatch: boolean; readonly via: number }

const index = fc.nat({ max: 50 })
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant("create" as const),
    status: fc.constantFrom("available" as const, "pending" as const, "sold" as const),
    via: index
  }),
  fc.record({ kind: fc.constant("place" as const), pet: index, key: index, idempotent: fc.boolean(), via: index }),
  fc.record({ kind: fc.constant("place" as const), pet: index, key: index, idempotent: fc.boolean(), via: index }),
  fc.record({ kind: fc.constant("cancel" as const), order: index, key: index, via: index }),
  fc.record({ kind: fc.constant("deliver" as const), order: index, via: index }),
  fc.record({ kind: fc.constant("patch" as const), pet: index, key: index, ifMatch: fc.boolean(), via: index }),
  fc.record({ kind: fc.constant("delete" as const), pet: index, ifMatch: fc.boolean(), via: index })
)
/** Batches of commands: every command of a batch is in flight at once; batches follow one another. */
const batches = fc.array(fc.array(command, { minLength: 2, maxLength: 12 }), { minLength: 1, maxLength: 4 })

/** What each command may answer: anything else (a 500 above all) fails the run. */
const allowed: Record<Command["kind"], ReadonlyArray<number>> = {
  create: [201],
  place: [201, 404, 409],
  cancel: [200, 404, 409],
  deliver: [200, 404, 409],
  patch: [200, 404, 412],
  delete: [204, 404, 409, 412]
}

interface Keys {
  readonly customers: ReadonlyArray<string>
  readonly staff: string
}

/**
 * Runs one drawn scenario over the given servers (base URLs ending in /v1):
 * three available pets to fight over, then the batches.
 */
const runScenario = async (
  servers: ReadonlyArray<string>,
  keys: Keys,
  drawn: ReadonlyArray<ReadonlyArray<Command>>
) => {
  const everyKey = [...keys.customers, keys.staff]
  const pets: Array<{ id: number; etag: string }> = []
  const orders: Array<number> = []
  const at = <A>(list: ReadonlyArray<A>, i: number) => list.length === 0 ? undefined : list[i % list.length]
  const call = async (
    kind: Command["kind"],
    via: number,
    key: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {}
  ) => {
    const answer: Answer = await send(`${at(servers, via)}${path}`, {
      method,
      headers: { ...(body === undefined ? bearer(key) : json(key)), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    expect(allowed[kind], `${method} ${path}: ${answer.status} ${answer.text}`).toContain(answer.status)
    return answer
  }
  const create = async (status: string, via: number) => {
    const created = await call("create", via, keys.customers[0]!, "POST", "/pets", {
      name: "Contested",
      categoryId: 1,
      status
    })
    pets.push({ id: created.body.id, etag: created.headers.get("etag")! })
  }
  for (let i = 0; i < 3; i++) await create("available", i)

  const run = async (command: Command): Promise<void> => {
    switch (command.kind) {
      case "create":
        return create(command.status, command.via)
      case "place": {
        const pet = at(pets, command.pet)
        if (pet === undefined) return
        const headers: Record<string, string> = command.idempotent
          ? { "idempotency-key": `place-${pet.id}-${command.key % everyKey.length}` }
          : {}
        const placed = await call("place", command.via, at(everyKey, command.key)!, "POST", "/store/orders", {
          petId: pet.id
        }, headers)
        if (placed.status === 201) orders.push(placed.body.id)
        return
      }
      case "cancel": {
        const order = at(orders, command.order)
        if (order !== undefined) {
          await call("cancel", command.via, at(everyKey, command.key)!, "POST", `/store/orders/${order}/cancel`)
        }
        return
      }
      case "deliver": {
        const order = at(orders, command.order)
        if (order !== undefined) {
          await call("deliver", command.via, keys.staff, "POST", `/store/orders/${order}/deliver`)
        }
        return
      }
      case "patch": {
        const pet = at(pets, command.pet)
        if (pet === undefined) return
        const patched = await call("patch", command.via, at(everyKey, command.key)!, "PATCH", `/pets/${pet.id}`, {
          name: `Renamed ${command.key}`
        }, command.ifMatch ? { "if-match": pet.etag } : {})
        if (patched.status === 200) pet.etag = patched.headers.get("etag")!
        return
      }
      case "delete": {
        const pet = at(pets, command.pet)
        if (pet !== undefined) {
          await call(
            "delete",
            command.via,
            keys.staff,
            "DELETE",
            `/pets/${pet.id}`,
            undefined,
            command.ifMatch ? { "if-match": pet.etag } : {}
          )
        }
        return
      }
    }
  }
  for (const batch of drawn) await Promise.all(batch.map(run))
}

const staffKey = async (adminUrl: string) => {
  const answer = await send(`${adminUrl}/admin/keys`, {
    method: "POST",
    headers: { ...bearer(ADMIN_TOKEN), "content-type": "application/json" },
    body: JSON.stringify({ plan: "enterprise", limits: { perMinute: 1_000_000, perDay: 100_000_000 }, role: "staff" })
  })
  return answer.body.key as string
}

describeOnEachBackend("orders under concurrent commands, in one server process", ({ name }) => {
  let server: Awaited<ReturnType<typeof startServer>>
  let keys: Keys
  beforeAll(async () => {
    server = await startServer(name)
    const limits = { perMinute: 1_000_000, perDay: 100_000_000 }
    keys = {
      customers: [
        (await server.createKey("enterprise", limits)).key,
        (await server.createKey("enterprise", limits)).key
      ],
      staff: await staffKey(server.adminUrl)
    }
  })
  afterAll(() => server?.stop())

  // No bound of its own here or below: vitest.config.ts's hang guards apply. At load 45 on two cores this
  // property on PGlite ran past the 120 s it once had, and three processes took as long to start.
  it("keeps every pending pet's one open order, and no other pet's, whatever the interleaving", async () => {
    await fc.assert(
      fc.asyncProperty(batches, async (drawn) => {
        await runScenario([server.baseUrl], keys, drawn)
        expect(await apiViolations(server.baseUrl, keys.staff)).toEqual([])
      }),
      { numRuns: 15 }
    )
  })
})

describe("orders over three server processes on one PostgreSQL database", needsPostgres, () => {
  const processes: Array<StartedProcess> = []
  let database: TestDatabase
  let keys: Keys
  const bases = () => processes.map((process) => `${process.origin}/v1`)

  beforeAll(async () => {
    database = await createTestDatabase(postgresAdminUrl!)
    // Exact counts are asked here, not speed: 30 orders for one pet queue on its row lock, and at load 40 they
    // waited past the default 5 s statement timeout and got 503 (94 of 300, measured) instead of 409.
    const env = { DATABASE_URL: database.url, DATABASE_STATEMENT_TIMEOUT: "60" }
    processes.push(...await Promise.all([0, 1, 2].map(() => startServerProcess(env))))
    const limits = { perMinute: 1_000_000, perDay: 100_000_000 }
    keys = {
      customers: [
        await processes[0]!.createKey("enterprise", limits),
        await processes[1]!.createKey("enterprise", limits)
      ],
      staff: await staffKey(processes[2]!.admin)
    }
  })
  afterAll(async () => {
    await Promise.all(processes.map((process) => process.server.stop()))
    await database?.drop()
  })

  it(
    "of concurrent orders for one pet, from every key and process, exactly one is 201 and all others 409",
    async () => {
      const everyKey = [...keys.customers, keys.staff]
      const PETS = 10
      const ORDERS_PER_PET = 30
      const pets = await Promise.all(Array.from({ length: PETS }, (_, i) =>
        send(`${bases()[i % 3]}/pets`, {
          method: "POST",
          headers: json(keys.customers[0]!),
          body: JSON.stringify({ name: "Raced", categoryId: 1 })
        })))
      const answers = await Promise.all(
        pets.flatMap((pet) =>
          Array.from({ length: ORDERS_PER_PET }, (_, i) =>
            send(`${bases()[i % 3]}/store/orders`, {
              method: "POST",
              headers: json(everyKey[(i + pet.body.id) % everyKey.length]!),
              body: JSON.stringify({ petId: pet.body.id })
            }).then((answer) => ({ petId: pet.body.id as number, answer })))
        )
      )
      for (const pet of pets) {
        const mine = answers.filter(({ petId }) => petId === pet.body.id).map(({ answer }) => answer)
        expect(mine.filter((answer) => answer.status === 201), `pet ${pet.body.id}`).toHaveLength(1)
        expect(mine.filter((answer) => answer.status === 409 && answer.body.code === "pet_not_available")).toHaveLength(
          ORDERS_PER_PET - 1
        )
      }
      expect(answers).toHaveLength(PETS * ORDERS_PER_PET)
      expect(answers.filter(({ answer }) => answer.status === 201)).toHaveLength(PETS)
      expect(answers.filter(({ answer }) => answer.status === 409)).toHaveLength(PETS * (ORDERS_PER_PET - 1))
      expect(await sqlViolations(database.url)).toEqual([])
    }
  )

  it(
    "keeps the invariants, checked through the API and by the invariant query, whatever the interleaving over the processes",
    async () => {
      await fc.assert(
        fc.asyncProperty(batches, async (drawn) => {
          await runScenario(bases(), keys, drawn)
          expect(await apiViolations(bases()[0]!, keys.staff)).toEqual([])
          expect(await sqlViolations(database.url)).toEqual([])
        }),
        { numRuns: 25 }
      )
    },
    300_000
  )
})
