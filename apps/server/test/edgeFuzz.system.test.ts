/**
 * The edge fuzzer (issue 20, "the class behind all of them"): generated requests against real server
 * processes, on the public and the admin listener, with and without `TRUST_PROXY`, on PGlite and (with
 * DATABASE_URL) PostgreSQL. A request is a request line (any method Node lets through, a path of
 * hostile segments with `;`, `#`, escapes and numbers beyond every column, a query, or an absolute-form
 * or asterisk target), headers (`Host`, `X-Forwarded-For`, `Forwarded`, `If-Match`, `If-None-Match`,
 * `Idempotency-Key`, `Authorization`, `Accept-Encoding`, `Content-Type`, `X-Request-Id`) and a body
 * (pets and keys with hostile names and numbers, or any JSON). Each is sent beside a well-formed request
 * on the same listener.
 *
 * The property, for every request: an answer below 500 (what Node's parser refuses has its own tests,
 * malformedHttp.test.ts: the generators stay within what node:http sends), no log line at ERROR
 * while it ran, and the well-formed request beside it answered 200.
 *
 * Seeded and replayable: EDGE_FUZZ_SEED (default 20261125) and EDGE_FUZZ_RUNS (default 200 per listener and TRUST_PROXY setting).
 * A failure prints fast-check's seed and path; run again with that seed to replay it:
 * `EDGE_FUZZ_SEED=<seed> pnpm --filter @petstore/server exec vitest run test/edgeFuzz.system.test.ts`.
 */
import {
  ADMIN_TOKEN,
  createTestDatabase,
  postgresAdminUrl,
  type StartedProcess,
  startServerProcess,
  type TestDatabase
} from "@petstore/test-support"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, suiteOptions } from "./support/databases.ts"
import { type RawAnswer, type RawRequest, rawRequest } from "./support/rawHttp.ts"

const SEED = Number(process.env.EDGE_FUZZ_SEED ?? 20261125)
const RUNS = Number(process.env.EDGE_FUZZ_RUNS ?? 200)

const BEYOND = [
  "0",
  "-1",
  "2147483647",
  "2147483648",
  "4294967296",
  "9007199254740991",
  "9007199254740993",
  "99999999999999999999",
  "1e3",
  "1.5",
  "0x10",
  "01"
]
const numberish = fc.oneof(
  fc.constantFrom(...BEYOND),
  fc.integer({ min: -5, max: 50 }).map(String),
  fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String)
)

/** Characters node:http puts in a request target (it refuses controls and spaces). */
const targetChar = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)) }
)
/** Characters node:http puts in a header value (it refuses controls but tab). */
const headerChar = fc.oneof(
  { weight: 10, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.constantFrom("\t", "\u00e9", "\u00ff", "\u0080") }
)
const headerText = (maxLength: number) => fc.string({ unit: headerChar, maxLength })

const segment = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "v1",
      "pets",
      "store",
      "orders",
      "admin",
      "keys",
      "docs",
      "openapi.json",
      "healthz",
      "readyz",
      "metrics",
      "rate_limit",
      "cancel",
      "deliver",
      "usage",
      "unban",
      "1",
      "2",
      "%00",
      "%2F",
      "%3B",
      "%23",
      "%zz",
      "%",
      ".",
      "..",
      "",
      ";",
      "3;admin",
      "1#x",
      "key_0123456789abcdef",
      "key_zzzz",
      "%E2%80%AE",
      "%C0%AF"
    )
  },
  { weight: 2, arbitrary: numberish },
  { weight: 1, arbitrary: fc.string({ unit: targetChar, maxLength: 12 }).map((text) => text.replace(/[?]/g, "")) }
)
const query = fc.array(
  fc.tuple(
    fc.constantFrom("limit", "cursor", "status", "x", "limit"),
    fc.oneof(numberish, fc.string({ unit: targetChar, maxLength: 10 }))
  ),
  { maxLength: 3 }
).map((pairs) => pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${k}=${v}`).join("&")}`)
const path = fc.tuple(
  fc.constantFrom("", "/v1", "/v1/pets", "/v1/store/orders", "/admin/keys", "/admin"),
  fc.array(segment, { maxLength: 4 }),
  query
).map(([prefix, segments, q]) => `${prefix}/${segments.join("/")}${q}`)
const authority = fc.oneof(
  fc.constantFrom(
    "a:99999",
    "[::1",
    "a%zz",
    "example.com",
    "127.0.0.1:0",
    "x:port",
    "",
    "user@host",
    "[::1]:8080",
    "h:65536"
  ),
  fc.string({ unit: targetChar, maxLength: 16 }).map((text) => text.replace(/[/?#]/g, ""))
)
const target = fc.oneof(
  { weight: 8, arbitrary: path },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom("http", "https", "HTTP", "ftp"), authority, path).map(([scheme, auth, p]) =>
      `${scheme}://${auth}${p}`
    )
  },
  { weight: 1, arbitrary: fc.constantFrom("*", "a:80", "//a:99999/x", "//evil.example/v1/pets") }
)

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join("."))
const forwardedFor = fc.oneof(
  ipv4,
  fc.array(fc.oneof(ipv4, fc.constantFrom("::1", "[2001:db8::1]:443", "unknown", "", " ", "2001:db8::/64")), {
    minLength: 1,
    maxLength: 4
  }).map((list) => list.join(", ")),
  headerText(40),
  fc.integer({ min: 1_000, max: 3_000 }).map((length) => "x".repeat(length))
)
const forwarded = fc.oneof(
  fc.tuple(ipv4, fc.constantFrom("http", "https")).map(([ip, proto]) => `for=${ip};proto=${proto}`),
  fc.constantFrom(`for="[2001:db8::1]:80"`, "for=unknown", "for=_hidden, for=198.51.100.1", "by=;for=;host="),
  headerText(40)
)
const entityTag = fc.oneof(
  fc.tuple(numberish, numberish).map(([id, version]) => `"${id}.${version}"`),
  fc.tuple(numberish, numberish).map(([id, version]) => `W/"${id}.${version}"`),
  fc.constantFrom("*", `""`, `"`, `"1.1", "1.2147483648"`, "1.1"),
  headerText(30)
)

interface Keys {
  readonly customer: string
  readonly staff: string
}

const headersOf = (keys: Keys, admin: boolean) =>
  fc.record({
    host: fc.oneof(
      fc.constantFrom(
        "127.0.0.1",
        "api.example.com:8443",
        "[::1]",
        "x>; rel=\"next\", <https://evil.example",
        "a b",
        "h:99999",
        "pet_store"
      ),
      headerText(20)
    ),
    "x-forwarded-for": forwardedFor,
    forwarded,
    "if-match": entityTag,
    "if-none-match": entityTag,
    "idempotency-key": fc.oneof(
      fc.uuid(),
      headerText(80),
      fc.integer({ min: 200, max: 400 }).map((length) => "k".repeat(length))
    ),
    authorization: fc.oneof(
      fc.constant(`Bearer ${admin ? ADMIN_TOKEN : keys.customer}`),
      fc.constant(`Bearer ${keys.staff}`),
      fc.constantFrom("Bearer", "Bearer ", "Basic YTpi", `Bearer ${"x".repeat(600)}`),
      headerText(30)
    ),
    "accept-encoding": fc.oneof(
      fc.constantFrom("gzip, deflate, br", "br;q=0", "*;q=0", "identity;q=0"),
      headerText(20)
    ),
    "content-type": fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "application/x-www-form-urlencoded",
      ""
    ),
    "x-request-id": headerText(40)
  }, { requiredKeys: ["authorization"] })

const hostileName = fc.oneof(
  fc.constantFrom(
    "\u200B",
    "Rex\u202Egnp",
    "a\u0000b",
    "\u3164",
    "e\u0301",
    " Rex ",
    "",
    "x".repeat(101),
    "\ud800",
    "Ŝarik 🐕"
  ),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 })
)
const hostileNumber = fc.oneof(
  // 9007199254740993 is what a client may send: JavaScript reads it as 2^53, as the server's JSON.parse does.
  // eslint-disable-next-line no-loss-of-precision
  fc.constantFrom(0, -1, 1, 2147483647, 2147483648, 9007199254740991, 9007199254740993, 1e300, 1.5, -0),
  fc.integer(),
  fc.double()
)
const body = fc.oneof(
  fc.record({ name: hostileName, categoryId: hostileNumber, status: fc.constantFrom("available", "sold", "x") }, {
    requiredKeys: []
  }).map((b) => JSON.stringify(b)),
  fc.record({ petId: hostileNumber }).map((b) => JSON.stringify(b)),
  fc.record({
    plan: fc.constantFrom("free", "pro", "enterprise", "x"),
    name: hostileName,
    limits: fc.record({ perMinute: hostileNumber, perDay: hostileNumber }, { requiredKeys: [] }),
    role: fc.constantFrom("customer", "staff", "root")
  }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.string({ unit: "binary", maxLength: 40 })
)

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "QUERY"] as const

const fuzzRequest = (keys: Keys, admin: boolean) =>
  fc.record({
    method: fc.constantFrom(...METHODS),
    path: admin
      ? fc.oneof(
        target,
        fc.tuple(fc.array(segment, { maxLength: 3 }), query).map(([s, q]) => `/admin/keys/${s.join("/")}${q}`)
      )
      : target,
    headers: headersOf(keys, admin),
    body: fc.option(body, { nil: undefined })
  }).map(({ method, path: requestPath, headers, body: requestBody }): RawRequest => ({
    method,
    path: requestPath,
    headers: Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined)) as Record<
      string,
      string
    >,
    ...(requestBody !== undefined && method !== "GET" && method !== "HEAD" ? { body: requestBody } : {}),
    timeout: 120_000
  }))

const describeAnswer = (answer: RawAnswer) =>
  answer.kind === "response" ? `${answer.status} ${answer.text.slice(0, 300)}` : `${answer.code} ${answer.message}`

const errorLines = (output: string) =>
  output.split("\n").filter((line) => line.includes(`"level":"ERROR"`) || line.includes("[ERROR]"))

for (const backend of backends) {
  describe(`the edge fuzzer on ${backend.name}`, suiteOptions(backend.name), () => {
    const servers: Array<{ readonly trustProxy: boolean; readonly started: StartedProcess; readonly keys: Keys }> = []
    const databases: Array<TestDatabase> = []

    beforeAll(async () => {
      const start = async (trustProxy: boolean) => {
        const database = backend.name === "postgres" ? await createTestDatabase(postgresAdminUrl!) : undefined
        if (database !== undefined) databases.push(database)
        const started = await startServerProcess({
          ...(database !== undefined ? { DATABASE_URL: database.url } : { DATA_DIR: ":memory:" }),
          TRUST_PROXY: String(trustProxy),
          // Generated requests without a valid key must reach the routes, not all stop at 429.
          ANONYMOUS_RATE_LIMIT: "1000000000"
        })
        const limits = { perMinute: 2_000_000_000, perDay: 2_000_000_000 }
        const keys = {
          customer: await started.createKey("enterprise", limits),
          staff: await started.createKey("enterprise", limits, "staff")
        }
        servers.push({ trustProxy, started, keys })
      }
      await Promise.all([start(false), start(true)])
    }, 300_000)

    afterAll(async () => {
      await Promise.all(servers.map(({ started }) => started.server.stop()))
      await Promise.all(databases.map((database) => database.drop()))
    }, 60_000)

    for (const trustProxy of [false, true]) {
      for (const listener of ["public", "admin"] as const) {
        it(
          `TRUST_PROXY=${trustProxy}, ${listener} listener: no 5xx, no ERROR line, and the well-formed request beside each answered 200 (seed ${SEED})`,
          async () => {
            const { started, keys } = servers.find((server) => server.trustProxy === trustProxy)!
            const admin = listener === "admin"
            const origin = admin ? started.admin : started.origin
            const wellFormed: RawRequest = admin
              ? {
                method: "GET",
                path: "/admin/keys",
                headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
                timeout: 120_000
              }
              : {
                method: "GET",
                path: "/v1/pets?limit=5",
                headers: { authorization: `Bearer ${keys.customer}` },
                timeout: 120_000
              }
            await fc.assert(
              fc.asyncProperty(fuzzRequest(keys, admin), async (request) => {
                const errorsBefore = errorLines(started.server.output()).length
                const [answer, beside] = await Promise.all([
                  rawRequest(origin, request),
                  rawRequest(origin, wellFormed)
                ])
                const where = `${request.method} ${request.path} ${JSON.stringify(request.headers)} ${
                  request.body ?? ""
                }\n→ ${describeAnswer(answer)}`
                expect(answer.kind, where).toBe("response")
                if (answer.kind === "response") expect(answer.status, where).toBeLessThan(500)
                expect(
                  beside.kind === "response" ? beside.status : describeAnswer(beside),
                  `the well-formed request beside ${where}`
                ).toBe(200)
                const errors = errorLines(started.server.output()).slice(errorsBefore)
                expect(errors, `ERROR lines while ${where}`).toEqual([])
              }),
              { seed: SEED + (trustProxy ? 1 : 0) + (admin ? 2 : 0), numRuns: RUNS }
            )
          },
          600_000
        )
      }
    }
  })
}
