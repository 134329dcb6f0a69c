/**
 * Acknowledged writes survive a crash. A real server process takes a stream of
 * concurrent POST /v1/pets and is killed with SIGKILL in the middle of it; a new
 * process on the same database must then return every pet that was answered 201,
 * with the same body (README: "the pet is committed before the answer is sent").
 *
 * On PostgreSQL (a fresh database) and on the embedded default, PGlite, with
 * DATA_DIR in a temporary folder.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import {
  createTestDatabase,
  postgresAdminUrl,
  type StartedProcess,
  startServerProcess,
  type TestDatabase,
  waitForExit
} from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"

interface Pet {
  readonly id: number
  readonly name: string
  readonly categoryId: number
  readonly status: string
}

const running: Array<StartedProcess> = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((started) => started.server.stop()))
})

const start = async (env: Record<string, string>) => {
  const started = await startServerProcess(env)
  running.push(started)
  return started
}

const STATUSES = ["available", "pending", "sold"] as const

/**
 * Creates pets from `concurrency` loops until the process dies; SIGKILLs it once
 * `killAfter` pets were acknowledged, while the loops keep sending. Returns the
 * acknowledged pets and how many requests were in flight at the kill.
 */
const createUntilKilled = async (
  started: StartedProcess,
  key: string,
  options: { concurrency: number; killAfter: number }
) => {
  const acknowledged = new Map<number, Pet>()
  let inFlight = 0
  let inFlightAtKill = -1
  let killed = false
  let sent = 0
  const failures: Array<string> = []
  const loop = async (worker: number) => {
    for (let i = 0; !killed; i++) {
      const name = `Durable ${worker}-${i} ✓${"é".repeat(i % 7)}`
      const body = { name, categoryId: 1 + ((worker * 31 + i) % 1000), status: STATUSES[(worker + i) % 3]! }
      inFlight++
      sent++
      try {
        const response = await fetch(`${started.origin}/v1/pets`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(60_000)
        })
        const text = await response.text()
        if (response.status === 201) {
          const pet = JSON.parse(text) as Pet
          expect(pet).toEqual({ id: expect.any(Number), ...body })
          expect(acknowledged.has(pet.id), `id ${pet.id} was handed out twice`).toBe(false)
          acknowledged.set(pet.id, pet)
          if (acknowledged.size >= options.killAfter && !killed) {
            killed = true
            inFlightAtKill = inFlight - 1
            started.server.child.kill("SIGKILL")
          }
        } else if (!killed) {
          failures.push(`${response.status} ${text}`)
        }
      } catch (error) {
        // After the kill, requests fail with a reset or a refused connection; before it, nothing may fail.
        if (!killed) failures.push(String((error as { cause?: unknown }).cause ?? error))
        return
      } finally {
        inFlight--
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, (_, worker) => loop(worker)))
  expect(failures, `requests failed before the kill:\n${started.server.output()}`).toEqual([])
  const exit = await waitForExit(started.server.child, 10_000)
  expect(exit?.signal).toBe("SIGKILL")
  return { acknowledged, inFlightAtKill, sent }
}

/** Every pet, walking the `Link: rel="next"` pages from GET /v1/pets. */
const allPets = async (origin: string, key: string) => {
  const pets: Array<Pet> = []
  let next: string | undefined = `${origin}/v1/pets?limit=100`
  for (let page = 0; next !== undefined; page++) {
    expect(page, "more pages than pets could fill").toBeLessThan(1_000)
    const response: Response = await fetch(next, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(60_000)
    })
    expect(response.status, await response.clone().text()).toBe(200)
    pets.push(...((await response.json()) as Array<Pet>))
    next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get("link") ?? "")?.[1]
  }
  return pets
}

const expectEveryAcknowledgedPet = async (
  restarted: StartedProcess,
  key: string,
  run: { acknowledged: Map<number, Pet>; inFlightAtKill: number; sent: number }
) => {
  const stored = await allPets(restarted.origin, key)
  const byId = new Map(stored.map((pet) => [pet.id, pet]))
  expect(byId.size, "the walk repeated a pet").toBe(stored.length)
  const lost = [...run.acknowledged.values()].filter((pet) => byId.get(pet.id) === undefined)
  const changed = [...run.acknowledged.values()].filter((pet) =>
    byId.has(pet.id) && JSON.stringify(byId.get(pet.id)) !== JSON.stringify(pet)
  )
  const summary = `${run.acknowledged.size} acknowledged, ${stored.length} stored, ${run.sent} sent, ` +
    `${run.inFlightAtKill} in flight at the kill; lost ${lost.length}: ${JSON.stringify(lost.slice(0, 5))}; ` +
    `changed ${changed.length}: ${
      JSON.stringify(changed.slice(0, 5))
    }\nrestarted process output:\n${restarted.server.output()}`
  expect(lost, summary).toEqual([])
  expect(changed, summary).toEqual([])
  // The deprecated single-pet read agrees for a sample.
  for (const pet of [...run.acknowledged.values()].slice(-5)) {
    const response = await fetch(`${restarted.origin}/v1/pets/${pet.id}`, {
      headers: { authorization: `Bearer ${key}` }
    })
    expect(response.status, summary).toBe(200)
    expect(await response.json()).toEqual(pet)
  }
  // And the restarted server takes new writes after the ids of the old ones.
  const created = await fetch(`${restarted.origin}/v1/pets`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "After the crash", categoryId: 1 })
  })
  expect(created.status).toBe(201)
  const after = (await created.json()) as Pet
  expect(after.id).toBeGreaterThan(Math.max(...run.acknowledged.keys()))
}

const databases: Array<TestDatabase> = []
const dataDirs: Array<string> = []
afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()))
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

describe("durability after SIGKILL on PostgreSQL", needsPostgres, () => {
  it("every pet answered 201 before the kill is there, unchanged, after a restart", async () => {
    const database = await createTestDatabase(postgresAdminUrl!)
    databases.push(database)
    const first = await start({ DATABASE_URL: database.url })
    const key = await first.createKey("enterprise", { perMinute: 1_000_000, perDay: 10_000_000 })
    const run = await createUntilKilled(first, key, { concurrency: 8, killAfter: 150 })
    const restarted = await start({ DATABASE_URL: database.url })
    await expectEveryAcknowledgedPet(restarted, key, run)
  })
})

describe("durability after SIGKILL on the embedded PGlite (DATA_DIR)", () => {
  it("every pet answered 201 before the kill is there, unchanged, after a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "petstore-durability-"))
    dataDirs.push(dataDir)
    const first = await start({ DATA_DIR: dataDir })
    const key = await first.createKey("enterprise", { perMinute: 1_000_000, perDay: 10_000_000 })
    const run = await createUntilKilled(first, key, { concurrency: 8, killAfter: 150 })
    const restarted = await start({ DATA_DIR: dataDir })
    await expectEveryAcknowledgedPet(restarted, key, run)
  })
})
