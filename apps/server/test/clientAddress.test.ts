import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Answer, bearer, send } from "@petstore/test-support"
import { describeOnEachBackend } from "./support/databases.ts"
import { type RunningServer, startServer } from "./support/testServer.ts"
import { settings } from "./support/settings.ts"

const ANONYMOUS_LIMIT = 5
let addresses = 0
/** A documentation address (RFC 5737) no other test of the suite uses. */
const freshAddress = () => `198.51.100.${++addresses}`

/**
 * What a proxy that appends (nginx's `$proxy_add_x_forwarded_for`, a cloud
 * load balancer) passes on: the client's own header, then the address it saw.
 */
const appended = (clientWrote: string | undefined, seen: string) =>
  clientWrote === undefined ? seen : `${clientWrote}, ${seen}`

/** The answers of `burst`, sent again with fresh addresses when the minute turned over midway. */
const inOneMinute = async (burst: () => Promise<ReadonlyArray<Answer>>) => {
  for (let attempt = 0;; attempt++) {
    const answers = await burst()
    if (new Set(answers.map((a) => a.headers.get("x-ratelimit-reset"))).size <= 1 || attempt === 2) return answers
  }
}

describeOnEachBackend("the client address behind a trusted proxy (TRUST_PROXY=1)", ({ name }) => {
  let server: RunningServer
  const pets = (headers: Record<string, string>) => send(`${server.baseUrl}/pets`, { headers })

  beforeAll(async () => {
    server = await startServer(name, { trustProxy: settings.trustProxy("1"), anonymousPerMinute: ANONYMOUS_LIMIT })
  })
  afterAll(() => server?.stop())

  it("answers a request with kilobytes of random X-Forwarded-For, and the keyed requests beside it", async () => {
    const { key } = await server.createKey("enterprise", { perMinute: 1_000, perDay: 10_000 })
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all([
        pets({ "x-forwarded-for": randomBytes(1800).toString("base64") }),
        pets({ "x-forwarded-for": `${randomBytes(1800).toString("base64")}, ${freshAddress()}` }),
        ...Array.from({ length: 8 }, () => pets(bearer(key)))
      ])
      expect(answers.map((answer) => answer.status)).toEqual([401, 401, ...Array(8).fill(200)])
    }
  })

  it("counts a client by the address the proxy saw: a spoofed first entry neither evades the limit nor locks out its owner", async () => {
    const answers = await inOneMinute(async () => {
      const [attacker, victim] = [freshAddress(), freshAddress()]
      const spoofed: Array<Answer> = []
      for (let i = 0; i <= ANONYMOUS_LIMIT; i++) {
        // A new spoofed address each time: were the first entry believed, each would be a new client.
        spoofed.push(await pets({ "x-forwarded-for": appended(`203.0.113.${i + 1}, ${victim}`, attacker) }))
      }
      const victimsOwn = await pets({ "x-forwarded-for": appended(undefined, victim) })
      return [...spoofed, victimsOwn]
    })
    const statuses = answers.map((answer) => answer.status)
    expect(statuses).toEqual([...Array(ANONYMOUS_LIMIT).fill(401), 429, 401])
    expect(Number(answers.at(-1)!.headers.get("x-ratelimit-remaining"))).toBe(ANONYMOUS_LIMIT - 1)
  })

  it("counts the addresses of one IPv6 /64 together", async () => {
    const answers = await inOneMinute(async () => {
      const network = `2001:db8:${(++addresses).toString(16)}:1`
      const spread: Array<Answer> = []
      for (let i = 0; i <= ANONYMOUS_LIMIT; i++) {
        spread.push(await pets({ "x-forwarded-for": `[${network}::${i + 1}]:4000` }))
      }
      return spread
    })
    expect(answers.map((answer) => answer.status)).toEqual([...Array(ANONYMOUS_LIMIT).fill(401), 429])
  })
})

describeOnEachBackend("the client address behind listed proxies (TRUST_PROXY=127.0.0.0/8,::1)", ({ name }) => {
  let server: RunningServer
  const pets = (headers: Record<string, string>) => send(`${server.baseUrl}/pets`, { headers })

  beforeAll(async () => {
    server = await startServer(name, {
      trustProxy: settings.trustProxy("127.0.0.0/8, ::1"),
      anonymousPerMinute: ANONYMOUS_LIMIT
    })
  })
  afterAll(() => server?.stop())

  it("skips the trusted proxies from the right and counts the first address that is none of them", async () => {
    const answers = await inOneMinute(async () => {
      const client = freshAddress()
      const spread: Array<Answer> = []
      for (let i = 0; i <= ANONYMOUS_LIMIT; i++) {
        spread.push(await pets({ "x-forwarded-for": `203.0.113.${i + 1}, ${client}, 127.0.0.${i + 2}` }))
      }
      return spread
    })
    expect(answers.map((answer) => answer.status)).toEqual([...Array(ANONYMOUS_LIMIT).fill(401), 429])
  })
})
