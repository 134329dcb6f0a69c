/**
 * The fleet: three server hosts (network namespaces, the built server),
 * HAProxy running the reference configuration of docs/fleet.md (fleet/haproxy.cfg),
 * one PostgreSQL cluster of the test's own; host3's clock runs 1.8 s behind
 * (libfaketime). Run as root with `pnpm test:fleet`. Then a second fleet with
 * its quotas on a Redis Cluster of its own runs the quota's exactness and a
 * rolling restart again: the cases where the quota store is what is tested.
 *
 * The tests of a fleet run in order on it, each leaving every host up and ready.
 * Quotas are checked away from window boundaries (`awayFromBoundaries`), since
 * a burst that straddles a minute legitimately gets two windows' worth.
 */
import { planQuotas, verifyWebhook } from "@petstore/contract"
import { Effect } from "effect"
import { missingTool, type ReceivedWebhook, startWebhookReceiver, tryConnect } from "@petstore/test-support"
import { readFileSync, readlinkSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Fleet,
  type FleetHost,
  HOST_NAMES,
  type HostName,
  haproxyConfigFile,
  healthCheckSchedule,
  missingPrerequisite,
  missingRedis,
  startFleet
} from "../src/fleet.ts"
import {
  burst,
  concurrently,
  type LoadReport,
  type Outcome,
  send,
  type SteadyLoad,
  steadyLoad,
  tally
} from "../src/load.ts"

const SKEW = { host: "host3", offset: "-1.8s", seconds: -1.8 } as const
const schedule = healthCheckSchedule(readFileSync(haproxyConfigFile, "utf8"))
/** Twice the time the balancer's checks take to notice a host going away, as docs/fleet.md says: 3 s. */
const DRAIN_SECONDS = Math.ceil((2 * (schedule.interMs + (schedule.fall - 1) * schedule.fastinterMs)) / 1_000)
/**
 * The longest the balancer's checks take to find a dead host, by its own
 * schedule: the next check within `inter`, then `fall` − 1 more at `fastinter`,
 * the last one waiting out `timeout check` at worst.
 */
const DETECTION_BOUND_MS = schedule.interMs + (schedule.fall - 1) * schedule.fastinterMs + schedule.timeoutCheckMs
const RECOVERY_BOUND_MS = 30_000
/** A hang guard for one request: past the hosts' statement timeout (30 s, below), so a slow answer is still seen. */
const REQUEST_BOUND_MS = 40_000
/** A hang guard for deliveries to catch up after the load (an interrupted one waits out its 30 s lease). */
const DELIVERY_BOUND_MS = 120_000
/** The receiver listens on the test network's gateway: a private address, over plain HTTP. */
const WEBHOOK_ENV = { WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true" }

const auth = (key: string) => ({ authorization: `Bearer ${key}` })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const waitUntil = async (check: () => Promise<boolean> | boolean, timeoutMs: number, intervalMs = 50) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() >= deadline) return false
    await sleep(intervalMs)
  }
}

/**
 * Waits (at most 20 s) until every host's clock, skewed one included, is
 * at least 2 s into a minute and 10 s before its end: a burst then falls in one
 * minute window on every host (and in one day).
 */
const awayFromBoundaries = async () => {
  const offsetsMs = [0, SKEW.seconds * 1_000]
  const inside = () =>
    offsetsMs.every((offset) => {
      const second = ((Date.now() + offset) % 60_000) / 1_000
      return second >= 2 && second <= 50
    })
  expect(await waitUntil(inside, 20_000, 100)).toBe(true)
}

/** The outcomes that got an answer (not a reset or a timeout). */
const answered = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.filter((o): o is Extract<Outcome, { text: string }> => "text" in o)

const expectRefusals = (outcomes: ReadonlyArray<Outcome>) => {
  for (const refusal of answered(outcomes).filter((o) => o.status === 429)) {
    expect(JSON.parse(refusal.text)).toMatchObject({
      status: 429,
      code: expect.stringMatching(/^(rate_limited|api_key_banned)$/)
    })
    expect(refusal.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/)
  }
}

const sessionsByHost = async (fleet: Fleet) => {
  const servers = await fleet.servers()
  return Object.fromEntries(HOST_NAMES.map((name) => [name, servers[name].total])) as Record<HostName, number>
}

/** Of the ids answered 201, those not in the database. */
const missingWrites = async (fleet: Fleet, ids: ReadonlyArray<number>) => {
  const found = await fleet.sql<Array<{ id: number }>>`SELECT id FROM pets WHERE id = ANY(${ids as Array<
    number
  >}::bigint[])`
  const stored = new Set(found.map((row) => Number(row.id)))
  return ids.filter((id) => !stored.has(id))
}

const enterpriseKey = async (fleet: Fleet) =>
  (await fleet.createKey("enterprise", { perMinute: 1_000_000, perDay: 100_000_000 })).key

const everyHostUp = async (fleet: Fleet) => {
  const up = await fleet.balancerSees({ host1: "UP", host2: "UP", host3: "UP" }, RECOVERY_BOUND_MS)
  expect(up, `not every host is UP at the balancer: ${JSON.stringify(await fleet.servers())}`).toBe(true)
}

/**
 * Watches a host after SIGTERM until its listener refuses connections, and
 * returns the balancer's status of it seen just before. A host must stop
 * listening only once the balancer has taken it out of rotation: a request the
 * balancer sends on a pooled connection just as the host closes it is lost.
 */
const statusWhenListenerCloses = async (fleet: Fleet, host: FleetHost, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  let status = "unknown"
  while (Date.now() < deadline) {
    status = (await fleet.servers())[host.name].status
    if ((await tryConnect(host.address, host.port, 1_000)) !== "accepted") return status
    await sleep(20)
  }
  return `still listening ${timeoutMs} ms after SIGTERM (${status})`
}

/**
 * SIGTERM each host in turn, wait for it to exit cleanly, start it again and
 * wait until the balancer has it UP. Notes in `during` how many of the load's
 * requests were answered while each host was away, and in `statusAtClose` the
 * balancer's status of each as its listener closed.
 */
const rollingRestart = async (
  fleet: Fleet,
  load: SteadyLoad,
  during: Record<string, number>,
  statusAtClose: Record<string, string>
) => {
  for (const name of HOST_NAMES) {
    const host = fleet.hosts[name]
    const answeredBefore = load.answered()
    const stopping = host.stop("SIGTERM")
    statusAtClose[name] = await statusWhenListenerCloses(fleet, host, (DRAIN_SECONDS + 30) * 1_000)
    expect(await stopping, `${name} after SIGTERM:\n${host.output()}`).toEqual({ code: 0, signal: null })
    await host.start()
    expect(await fleet.balancerSees({ [name]: "UP" }, RECOVERY_BOUND_MS), `${name} back UP at the balancer`).toBe(true)
    during[name] = load.answered() - answeredBefore
  }
}

const hostOutputs = (fleet: Fleet) =>
  HOST_NAMES.map((name) => `--- ${name}:\n${fleet.hosts[name].output().slice(-2_000)}`).join("\n")

/**
 * 300 concurrent requests of a new free key through the balancer, spread over the three hosts (the skewed one
 * too): exactly 60 admitted, 240 refused, and the admin API reports 60. Returns the key's id.
 */
const exactlyTheFreeLimit = async (fleet: Fleet, store: string) => {
  const { id, key } = await fleet.createKey("free")
  await awayFromBoundaries()
  const before = await sessionsByHost(fleet)
  const outcomes = await concurrently(300, `${fleet.origin}/v1/pets?limit=1`, {
    headers: auth(key),
    timeoutMs: REQUEST_BOUND_MS
  })
  const after = await sessionsByHost(fleet)
  const spread = Object.fromEntries(HOST_NAMES.map((name) => [name, after[name] - before[name]]))
  console.info(
    `fleet (quotas on ${store}): 300 concurrent requests of a free key, by host: ${JSON.stringify(spread)}; answers ${
      JSON.stringify(tally(outcomes))
    }`
  )
  expect(tally(outcomes)).toEqual({ "200": 60, "429": 240 })
  expectRefusals(outcomes)
  for (const name of HOST_NAMES) expect(spread[name], `requests the balancer sent ${name}`).toBeGreaterThan(0)
  const usage = await fleet.usage(id)
  expect({ minute: usage.minute.used, day: usage.day.used }).toEqual({ minute: 60, day: 60 })
  return id
}

/**
 * A rolling restart under steady load (an enterprise key's lists and creates): no request fails, every
 * acknowledged write is stored, the load flowed while each host was away, and each host drained.
 */
const restartWithoutFailures = async (fleet: Fleet, label: string) => {
  const key = await enterpriseKey(fleet)
  const load = steadyLoad({
    origin: fleet.origin,
    key,
    workers: 6,
    pauseMs: 20,
    maxRequests: 60_000,
    maxMs: 120_000,
    label
  })
  const during: Record<string, number> = {}
  const statusAtClose: Record<string, string> = {}
  try {
    expect(await waitUntil(() => load.answered() >= 30, REQUEST_BOUND_MS)).toBe(true)
    await rollingRestart(fleet, load, during, statusAtClose)
  } finally {
    const report = await load.stop()
    console.info(
      `fleet: ${label}: ${report.requests} requests in ${report.durationMs} ms, ${JSON.stringify(report.byStatus)}; ` +
        `answered while each host restarted: ${
          JSON.stringify(during)
        }; balancer's status of each as it stopped listening: ` +
        JSON.stringify(statusAtClose)
    )
    expect(report.failures, hostOutputs(fleet)).toEqual([])
    expect(await missingWrites(fleet, report.created)).toEqual([])
    expect(report.created.length).toBeGreaterThan(0)
  }
  // The load flowed throughout: requests were answered while each host was away.
  for (const name of HOST_NAMES) expect(during[name], name).toBeGreaterThan(0)
  // Each host drained: out of rotation before its listener closed.
  expect(statusAtClose).toEqual({ host1: "DOWN", host2: "DOWN", host3: "DOWN" })
  await everyHostUp(fleet)
}

const missing = missingPrerequisite()

describe(
  "a fleet of three hosts behind HAProxy on one PostgreSQL",
  missing === undefined ? {} : missingTool(missing),
  () => {
    let fleet: Fleet
    beforeAll(async () => {
      fleet = await startFleet({
        skew: SKEW,
        drainSeconds: DRAIN_SECONDS,
        // A burst of one key's requests queues on its quota row, one commit after another: 1,240 at once took over
        // the default 5 s on a busy machine (146 answered 503). These tests ask for exactness, not speed.
        hostEnv: { ...WEBHOOK_ENV, DATABASE_STATEMENT_TIMEOUT: "30" }
      })
    }, 180_000)
    afterAll(async () => {
      await fleet?.destroy()
    }, 60_000)

    it("runs every host in its own namespace, one with its clock about 1.8 s behind, all UP at the balancer", async () => {
      await everyHostUp(fleet)
      const behindMs: Record<string, number> = {}
      for (const host of Object.values(fleet.hosts)) {
        const answer = await send(`${host.origin}/healthz`, { timeoutMs: REQUEST_BOUND_MS })
        expect(answer.status).toBe(200)
        // `Date` has whole seconds: a host in step reads 0–1 s behind (plus the request's time), host3 1.8–2.8 s.
        behindMs[host.name] = Date.now() - Date.parse((answer as { headers: Record<string, string> }).headers.date!)
      }
      console.info(`fleet: clocks behind the machine's, by Date headers (ms): ${JSON.stringify(behindMs)}`)
      expect(behindMs[SKEW.host]).toBeGreaterThanOrEqual(1_000)
      // Each host is a machine of its own on the test network: a network namespace apart from the others and from this one.
      const namespaces = Object.values(fleet.hosts).map((host) => readlinkSync(`/proc/${host.pid()}/ns/net`))
      expect(new Set([...namespaces, readlinkSync("/proc/self/ns/net")]).size).toBe(4)
    })

    it(
      "300 concurrent requests of one free key through the balancer, spread over the three hosts: exactly 60 admitted, 240 refused",
      async () => {
        await exactlyTheFreeLimit(fleet, "PostgreSQL")
      },
      60_000
    )

    it.each(["free", "pro", "business"] as const)(
      "%s's daily window, scaled to 1/100 through enterprise limits: exactly the limit admitted over the hosts, the rest refused",
      async (plan) => {
        const perDay = planQuotas[plan].perDay / 100
        // A per-minute limit that cannot bind, so the daily window alone decides.
        const { id, key } = await fleet.createKey("enterprise", { perMinute: 1_000_000, perDay })
        const refused = 240
        await awayFromBoundaries()
        const before = await sessionsByHost(fleet)
        const outcomes = await burst(
          perDay + refused,
          300,
          () => send(`${fleet.origin}/v1/pets?limit=1`, { headers: auth(key), timeoutMs: REQUEST_BOUND_MS })
        )
        const after = await sessionsByHost(fleet)
        expect(tally(outcomes)).toEqual({ "200": perDay, "429": refused })
        expectRefusals(outcomes)
        for (const refusal of answered(outcomes).filter((o) => o.status === 429)) {
          // The binding window is the day's.
          expect(refusal.headers["x-ratelimit-limit"]).toBe(String(perDay))
          expect(JSON.parse(refusal.text).code).toBe("rate_limited")
        }
        for (const name of HOST_NAMES) {
          expect(after[name] - before[name], `requests the balancer sent ${name}`)
            .toBeGreaterThan(0)
        }
        expect((await fleet.usage(id)).day.used).toBe(perDay)
      },
      60_000
    )

    it("each host holds at most 11 PostgreSQL connections: its pool of 10 and one for LISTEN", async () => {
      const rows = await fleet.sql<Array<{ client: string; connections: number }>>`
      SELECT host(client_addr) AS client, count(*)::int AS connections
      FROM pg_stat_activity WHERE application_name = 'petstore' GROUP BY 1 ORDER BY 1`
      const byHost = Object.fromEntries(rows.map((row) => [row.client, row.connections]))
      console.info(`fleet: PostgreSQL connections by host address after the bursts: ${JSON.stringify(byHost)}`)
      for (const host of Object.values(fleet.hosts)) {
        expect(byHost[host.address] ?? 0, host.name).toBeGreaterThan(0)
        expect(byHost[host.address], host.name).toBeLessThanOrEqual(11)
      }
    })

    it(
      "a rolling restart under steady load (SIGTERM, start again, one host after another): no request fails, every acknowledged write is stored",
      async () => {
        await restartWithoutFailures(fleet, "rolling")
      },
      150_000
    )

    it(
      "webhooks through a rolling restart: every committed pet.created reaches a real receiver, signed, none invented, each once",
      async () => {
        const receiver = await startWebhookReceiver(fleet.network.gateway)
        const key = await enterpriseKey(fleet)
        const registered = await send(`${fleet.origin}/v1/webhooks/endpoints`, {
          method: "POST",
          headers: auth(key),
          body: { url: receiver.url, eventTypes: ["pet.created"], description: "the fleet test's receiver" },
          timeoutMs: REQUEST_BOUND_MS
        })
        expect(registered.status, JSON.stringify(registered)).toBe(201)
        const endpoint = JSON.parse((registered as { text: string }).text) as { id: string; secret: string }
        const label = `webhooks ${endpoint.id}`
        const during: Record<string, number> = {}
        const statusAtClose: Record<string, string> = {}
        try {
          const load = steadyLoad({
            origin: fleet.origin,
            key,
            workers: 6,
            pauseMs: 20,
            maxRequests: 60_000,
            maxMs: 120_000,
            label
          })
          let report: LoadReport
          try {
            expect(await waitUntil(() => load.answered() >= 30, REQUEST_BOUND_MS)).toBe(true)
            await rollingRestart(fleet, load, during, statusAtClose)
          } finally {
            report = await load.stop()
            console.info(
              `fleet: webhooks through a rolling restart: ${report.requests} requests, ${
                JSON.stringify(report.byStatus)
              }, ` +
                `${report.created.length} pets acknowledged; answered while each host restarted: ${
                  JSON.stringify(during)
                }`
            )
          }
          expect(report.failures, hostOutputs(fleet)).toEqual([])
          const acknowledged = report.created
          expect(acknowledged.length).toBeGreaterThan(0)

          // Every committed write of the load (acknowledged or not: a 201 may be lost on the way) has its event.
          const committed = await fleet.sql<Array<{ id: string; petId: string }>>`
        SELECT id, data->>'id' AS "petId" FROM events WHERE type = 'pet.created' AND data->>'name' LIKE ${`${label} %`}`
          const committedByPet = new Map(committed.map((event) => [Number(event.petId), event.id]))
          expect(
            acknowledged.filter((petId) => !committedByPet.has(petId)),
            "acknowledged pets without a committed event"
          ).toEqual([])
          const committedIds = new Set(committed.map((event) => event.id))
          const delivered = () => new Set(receiver.received.map((delivery) => delivery.webhookId))
          const caughtUp = await waitUntil(
            async () => {
              const arrived = delivered()
              if (![...committedIds].every((id) => arrived.has(id))) return false
              const queued = await fleet.sql<Array<{ queued: number }>>`
          SELECT count(*)::int AS queued FROM webhook_messages WHERE endpoint_id = ${endpoint.id}`
              return queued[0]?.queued === 0
            },
            DELIVERY_BOUND_MS,
            250
          )
          const arrived = delivered()
          expect(
            { caughtUp, notArrived: acknowledged.filter((petId) => !arrived.has(committedByPet.get(petId)!)) },
            hostOutputs(fleet)
          ).toEqual({ caughtUp: true, notArrived: [] })

          // Nothing invented: each delivery is a committed event of the load, signed with the endpoint's secret,
          // and carries that event's pet.
          for (const delivery of receiver.received) {
            const event = await Effect.runPromise(
              verifyWebhook(endpoint.secret, delivery.headers as Record<string, string>, delivery.body)
            )
            expect(event.id).toBe(delivery.webhookId)
            expect(committedIds.has(event.id), `delivered ${event.id}, which no committed write of the load caused`)
              .toBe(true)
            expect(event.type).toBe("pet.created")
            expect(committedByPet.get(Number((event.data as { id: number }).id))).toBe(event.id)
          }

          // Once each: a webhook-id twice only where a delivery of it failed (the receiver's answer did not go out whole).
          const receipts = new Map<string, Array<ReceivedWebhook>>()
          for (const delivery of receiver.received) {
            receipts.set(String(delivery.webhookId), [...(receipts.get(String(delivery.webhookId)) ?? []), delivery])
          }
          const unexplained = [...receipts].filter(([, copies]) =>
            copies.length > 1 && copies.every((copy) => copy.answered)
          )
          const unanswered = receiver.received.filter((delivery) => !delivery.answered).length
          console.info(
            `fleet: webhooks: ${committedIds.size} events committed, ${receiver.received.length} deliveries received, ` +
              `${receipts.size} distinct webhook-ids, ${unanswered} answers not written out`
          )
          expect(
            unexplained.map(([id, copies]) => `${id} × ${copies.length}`),
            "duplicates after answers that all went out"
          ).toEqual([])
          expect(receipts.size).toBe(committedIds.size)
        } finally {
          await send(`${fleet.origin}/v1/webhooks/endpoints/${endpoint.id}`, {
            method: "DELETE",
            headers: auth(key),
            timeoutMs: REQUEST_BOUND_MS
          })
          await receiver.close()
        }
        expect(statusAtClose).toEqual({ host1: "DOWN", host2: "DOWN", host3: "DOWN" })
        await everyHostUp(fleet)
      },
      300_000
    )

    it(
      "a host killed (SIGKILL) under load: the balancer stops sending to it within its health checks, quotas stay exact, every 201 is stored",
      async () => {
        const victim: FleetHost = fleet.hosts.host2
        const key = await enterpriseKey(fleet)
        const free = await fleet.createKey("free")
        await awayFromBoundaries()
        const load = steadyLoad({
          origin: fleet.origin,
          key,
          workers: 6,
          pauseMs: 20,
          maxRequests: 60_000,
          maxMs: 90_000,
          label: "kill"
        })
        let downAfterMs: number | undefined
        try {
          expect(await waitUntil(() => load.answered() >= 30, REQUEST_BOUND_MS)).toBe(true)
          // A free key's burst in flight while the host dies: once some of it is answered, the rest is on its way,
          // and what was on the dead host is lost or retried elsewhere by the balancer.
          let burstAnswered = 0
          const duringKill = burst(300, 300, async () => {
            const outcome = await send(`${fleet.origin}/v1/pets?limit=1`, {
              headers: auth(free.key),
              timeoutMs: REQUEST_BOUND_MS
            })
            burstAnswered++
            return outcome
          })
          expect(await waitUntil(() => burstAnswered >= 30, REQUEST_BOUND_MS, 1)).toBe(true)
          const killedAt = Date.now()
          const answeredAtKill = burstAnswered
          expect(await victim.stop("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" })
          const down = await fleet.balancerSees({ [victim.name]: "DOWN" }, DETECTION_BOUND_MS)
          downAfterMs = Date.now() - killedAt
          expect(
            down,
            `not DOWN at the balancer within ${DETECTION_BOUND_MS} ms: ${JSON.stringify(await fleet.servers())}`
          ).toBe(true)
          const downAtLoadMs = Date.now() - load.startedAt

          // Never more than 60 admitted. A request the dead host admitted spent quota without an answer (or its
          // retry was refused), so fewer than 60 may come back 200; the count itself is exactly 60.
          const outcomes = await duringKill
          const counts = tally(outcomes)
          console.info(
            `fleet: free key's 300 requests, ${answeredAtKill} answered when a host was killed: ${
              JSON.stringify(counts)
            }`
          )
          expect(counts["200"] ?? 0).toBeLessThanOrEqual(60)
          expect((await fleet.usage(free.id)).minute.used).toBe(60)

          // From the DOWN mark on it is sent nothing, while the load goes on.
          const sessionsAtDown = (await fleet.servers())[victim.name].total
          const answeredAtDown = load.answered()
          expect(await waitUntil(() => load.answered() >= answeredAtDown + 100, 20_000)).toBe(true)
          expect((await fleet.servers())[victim.name].total).toBe(sessionsAtDown)

          // A fresh free key on the two hosts left: exactly 60 of 300.
          const second = await fleet.createKey("free")
          await awayFromBoundaries()
          const exact = await concurrently(300, `${fleet.origin}/v1/pets?limit=1`, {
            headers: auth(second.key),
            timeoutMs: REQUEST_BOUND_MS
          })
          expect(tally(exact)).toEqual({ "200": 60, "429": 240 })
          expectRefusals(exact)

          const report = await load.stop()
          const afterDown = report.failures.filter((failure) => failure.atMs > downAtLoadMs)
          console.info(
            `fleet: SIGKILL: DOWN at the balancer ${downAfterMs} ms after the kill (bound ${DETECTION_BOUND_MS} ms); ` +
              `load ${JSON.stringify(report.byStatus)}, failures ${JSON.stringify(report.failures)}`
          )
          expect(afterDown, "requests failed after the balancer took the dead host out").toEqual([])
          expect(await missingWrites(fleet, report.created)).toEqual([])
        } finally {
          await load.stop()
          if (!victim.running()) await victim.start()
        }
        await everyHostUp(fleet)
      },
      150_000
    )

    it(
      "PostgreSQL restarted under load (a crash: immediate stop): every host answers 503 with Retry-After meanwhile, and recovers by itself",
      async () => {
        const key = await enterpriseKey(fleet)
        const load = steadyLoad({
          origin: fleet.origin,
          key,
          workers: 6,
          pauseMs: 20,
          maxRequests: 60_000,
          maxMs: 120_000,
          label: "failover"
        })
        try {
          expect(await waitUntil(() => load.answered() >= 30, REQUEST_BOUND_MS)).toBe(true)
          await fleet.postgres.stop("immediate")
          const outageStartedAt = Date.now()

          for (const host of Object.values(fleet.hosts)) {
            const [list, create, ready, live] = await Promise.all([
              send(`${host.origin}/v1/pets?limit=1`, { headers: auth(key), timeoutMs: REQUEST_BOUND_MS }),
              send(`${host.origin}/v1/pets`, {
                method: "POST",
                headers: auth(key),
                body: { name: "During the outage", categoryId: 1 },
                timeoutMs: REQUEST_BOUND_MS
              }),
              send(`${host.origin}/readyz`, { timeoutMs: REQUEST_BOUND_MS }),
              send(`${host.origin}/healthz`, { timeoutMs: REQUEST_BOUND_MS })
            ])
            const where = `${host.name}: ${JSON.stringify({ list, create, ready })}\n${host.output()}`
            expect({ list: list.status, create: create.status, ready: ready.status, live: live.status }, where).toEqual(
              {
                list: 503,
                create: 503,
                ready: 503,
                live: 200
              }
            )
            for (const answer of [list, create, ready]) {
              if (!("text" in answer)) continue
              expect(answer.headers["retry-after"], where).toMatch(/^[1-9][0-9]*$/)
              expect(JSON.parse(answer.text), where).toMatchObject({ code: "service_unavailable", status: 503 })
            }
            expect(host.running(), `${host.name} exited during the outage`).toBe(true)
          }
          // Through the balancer, once it has taken every host out: its own 503, in the API's shape, with Retry-After.
          expect(await fleet.balancerSees({ host1: "DOWN", host2: "DOWN", host3: "DOWN" }, RECOVERY_BOUND_MS)).toBe(
            true
          )
          const viaBalancer = await send(`${fleet.origin}/v1/pets?limit=1`, {
            headers: auth(key),
            timeoutMs: REQUEST_BOUND_MS
          })
          expect(viaBalancer.status).toBe(503)
          if ("text" in viaBalancer) {
            expect(viaBalancer.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/)
            expect(JSON.parse(viaBalancer.text)).toMatchObject({ code: "service_unavailable", status: 503 })
          }

          const outageMs = Date.now() - outageStartedAt
          await fleet.postgres.start()
          const restartedAt = Date.now()
          for (const host of Object.values(fleet.hosts)) {
            const recovered = await waitUntil(
              async () =>
                (await send(`${host.origin}/v1/pets?limit=1`, { headers: auth(key), timeoutMs: REQUEST_BOUND_MS }))
                  .status === 200,
              RECOVERY_BOUND_MS,
              200
            )
            expect(
              recovered,
              `${host.name} did not answer 200 within ${RECOVERY_BOUND_MS} ms of the database's return:\n${host.output()}`
            )
              .toBe(true)
            const created = await send(`${host.origin}/v1/pets`, {
              method: "POST",
              headers: auth(key),
              body: { name: "After the outage", categoryId: 1 },
              timeoutMs: REQUEST_BOUND_MS
            })
            expect(created.status, host.name).toBe(201)
          }
          const hostsBackMs = Date.now() - restartedAt
          await everyHostUp(fleet)
          const balancerBackMs = Date.now() - restartedAt

          const report = await load.stop()
          console.info(
            `fleet: database down ${outageMs} ms; every host answering again ${hostsBackMs} ms and every host UP at the balancer ` +
              `${balancerBackMs} ms after its restart; load ${JSON.stringify(report.byStatus)}`
          )
          // The outage shows as 503s only (from the hosts, or the balancer's own); nothing else fails.
          expect(report.failures.filter((failure) => !failure.what.includes(" 503 "))).toEqual([])
          expect(await missingWrites(fleet, report.created)).toEqual([])
        } finally {
          await load.stop()
        }
      },
      150_000
    )
  }
)

describe(
  "a fleet of three hosts behind HAProxy with its quotas on a Redis Cluster (3 primaries, 3 replicas)",
  missing === undefined && missingRedis() === undefined ? {} : missingTool(missing ?? missingRedis()!),
  () => {
    let fleet: Fleet
    beforeAll(async () => {
      fleet = await startFleet({ skew: SKEW, drainSeconds: DRAIN_SECONDS, redisCluster: true })
    }, 180_000)
    afterAll(async () => {
      await fleet?.destroy()
    }, 60_000)

    /** A key's counts as the Cluster holds them (`redis-cli -c` follows the slot to its primary). */
    const countsInRedis = async (keyId: string) => {
      const reply = await fleet.redis!.nodes[0]!.cli("-c", "hmget", `quota:{key:${keyId}}`, "mc", "dc")
      const [minute, day] = reply.trim().split("\n").map(Number)
      return { minute, day }
    }
    const rowsInPostgres = async (keyId: string) =>
      (await fleet.sql<Array<{ rows: number }>>`
      SELECT count(*)::int AS rows FROM quota_usage WHERE subject = ${`key:${keyId}`}`)[0]!.rows

    it(
      "300 concurrent requests of one free key over the three hosts (one 1.8 s behind): exactly 60 admitted, counted in the Cluster, none in PostgreSQL",
      async () => {
        const id = await exactlyTheFreeLimit(fleet, "a Redis Cluster")
        expect(await countsInRedis(id)).toEqual({ minute: 60, day: 60 })
        expect(await rowsInPostgres(id)).toBe(0)
      },
      60_000
    )

    it(
      "a rolling restart under steady load: no request fails, every acknowledged write is stored, and a key's spent quota outlives every host",
      async () => {
        // A day's quota spent before the restart stays spent after it: the count is the Cluster's, not a host's.
        const spent = await fleet.createKey("enterprise", { perMinute: 1_000_000, perDay: 30 })
        const before = await burst(
          40,
          40,
          () => send(`${fleet.origin}/v1/pets?limit=1`, { headers: auth(spent.key), timeoutMs: REQUEST_BOUND_MS })
        )
        expect(tally(before)).toEqual({ "200": 30, "429": 10 })

        await restartWithoutFailures(fleet, "rolling on Redis")

        const after = await concurrently(30, `${fleet.origin}/v1/pets?limit=1`, {
          headers: auth(spent.key),
          timeoutMs: REQUEST_BOUND_MS
        })
        expect(tally(after)).toEqual({ "429": 30 })
        expect((await fleet.usage(spent.id)).day.used).toBe(30)
        expect(await countsInRedis(spent.id)).toMatchObject({ day: 30 })
      },
      150_000
    )
  }
)
