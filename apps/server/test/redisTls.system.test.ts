/**
 * TLS to Redis (`rediss://`), verified as DATABASE_URL's `sslmode=verify-full` is: the chain against
 * `sslrootcert` (or the system's CAs), and the host name against the certificate. The test makes a CA, a
 * second unrelated CA, a server certificate naming `localhost` only, one naming 127.0.0.1 for the Cluster
 * (its nodes announce addresses), and a client certificate (openssl), then starts its own TLS-only
 * redis-servers (`--port 0 --tls-port`), one that asks every client for a certificate (Redis's default):
 * - the right CA and client certificate, as an ACL user with a password of its own: serves, counts in Redis;
 * - another CA, or a host name the certificate does not carry: stops with one line saying why;
 * - no client certificate where Redis asks for one: stops with one line;
 * - a TLS-only Cluster (`--tls-cluster yes`) through its seeds: serves;
 * - TLS parameters on a plain `redis://` URL, an unknown parameter, a missing file: one line each.
 */
import {
  createTestDatabase,
  freePort,
  makeTestCertificates,
  postgresAdminUrl,
  serverEntry,
  startRedis,
  startServerProcess,
  type TestDatabase,
  type TestRedis
} from "@petstore/test-support"
import { spawnSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { needsPostgres } from "./support/databases.ts"
import { redisSuiteOptions } from "./support/layers.ts"

const certificates = makeTestCertificates()
const { file } = certificates

/** The quota store's least privilege: its keys, its script's commands, and what a client says on connecting. */
const QUOTA_USER_ACL = [
  "on",
  "resetkeys",
  "~quota:*",
  "resetchannels",
  "-@all",
  "+eval",
  "+evalsha",
  "+ping",
  "+time",
  "+hmget",
  "+hset",
  "+pexpire",
  "+exists",
  "+cluster|slots",
  "+cluster|shards"
]
const QUOTA_USER_PASSWORD = "quota-user-password-for-the-test"

/** A PostgreSQL database for the keys: it opens in a moment, where the embedded one takes many seconds on a busy machine. */
let database: TestDatabase | undefined

/** The server's start-up, run to its end: exit code and stderr. */
const startAndStop = async (env: Record<string, string>) =>
  spawnSync(process.execPath, [serverEntry()], {
    env: {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      DATABASE_URL: database!.url,
      QUOTA_STORE: "redis",
      ...env
    },
    encoding: "utf8",
    timeout: 120_000
  })

const expectOneLine = (result: Awaited<ReturnType<typeof startAndStop>>, pattern: RegExp) => {
  expect(result.status, result.stderr).toBe(1)
  const lines = result.stderr.trimEnd().split("\n")
  expect(lines, result.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(pattern)
  expect(lines[0]).not.toContain(QUOTA_USER_PASSWORD)
}

/** `rediss://` to each of `ports` through `host`, as the quota user, with the given parameters. */
const urlFor = (host: string, ports: ReadonlyArray<number>, params: Record<string, string>) =>
  ports.map((port) =>
    `rediss://quotas:${QUOTA_USER_PASSWORD}@${host}:${port}?${new URLSearchParams(params).toString()}`
  ).join(",")

const clientCertificate = () => ({ sslcert: file("client.pem"), sslkey: file("client.key") })

/** Serves with REDIS_URL: a key's request is admitted and its count is in Redis. */
const expectServesOn = async (redis: TestRedis, env: Record<string, string>) => {
  const started = await startServerProcess({ DATABASE_URL: database!.url, QUOTA_STORE: "redis", ...env })
  try {
    const { id, key } = await started.createKeyWithId("free")
    const answer = await fetch(`${started.origin}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    expect(answer.status, started.server.output()).toBe(200)
    expect(answer.headers.get("x-ratelimit-remaining")).toBe("59")
    // `-c` follows a Cluster's MOVED to the node that holds the key.
    expect((await redis.nodes[0]!.cli("-c", "hget", `quota:{key:${id}}`, "mc")).trim()).toBe("1")
  } finally {
    await started.server.stop()
  }
}

describe("TLS to Redis: rediss:// verified as DATABASE_URL's verify-full", {
  ...redisSuiteOptions(),
  ...needsPostgres
}, () => {
  let single: TestRedis | undefined
  let cluster: TestRedis | undefined
  beforeAll(async () => {
    database = await createTestDatabase(postgresAdminUrl!)
    certificates.makeCa("ca")
    certificates.makeCa("other-ca")
    certificates.makeCert("server", "ca", "/CN=localhost", "DNS:localhost")
    certificates.makeCert("cluster", "ca", "/CN=127.0.0.1", "IP:127.0.0.1")
    certificates.makeCert("client", "ca", "/CN=petstore")
    single = await startRedis({
      tls: { certFile: file("server.pem"), keyFile: file("server.key"), caFile: file("ca.pem"), authClients: "yes" }
    })
    expect(
      (await single.nodes[0]!.cli("acl", "setuser", "quotas", ...QUOTA_USER_ACL, `>${QUOTA_USER_PASSWORD}`)).trim()
    )
      .toBe("OK")
  }, 120_000)
  afterAll(async () => {
    await single?.stop()
    await cluster?.stop()
    await database?.drop()
    certificates.remove()
  })

  const port = () => single!.nodes[0]!.port

  it(
    "the CA that signed Redis's certificate, a client certificate, an ACL user: serves, counting in Redis",
    async () => {
      await expectServesOn(single!, {
        REDIS_URL: urlFor("localhost", [port()], { sslrootcert: file("ca.pem"), ...clientCertificate() })
      })
    },
    120_000
  )

  it("another CA: stops with one line, the certificate not trusted", async () => {
    expectOneLine(
      await startAndStop({
        REDIS_URL: urlFor("localhost", [port()], { sslrootcert: file("other-ca.pem"), ...clientCertificate() })
      }),
      /^petstore: cannot start: REDIS_URL \(localhost:\d+\): TLS: the server's certificate is not trusted/
    )
  }, 120_000)

  it("the system's CAs (no sslrootcert), which do not include the test's CA: stops, not trusted", async () => {
    expectOneLine(
      await startAndStop({ REDIS_URL: urlFor("localhost", [port()], clientCertificate()) }),
      /^petstore: cannot start: REDIS_URL \(localhost:\d+\): TLS: the server's certificate is not trusted/
    )
  }, 120_000)

  it("through 127.0.0.1, a name the certificate does not carry: stops with one line naming the host name", async () => {
    expectOneLine(
      await startAndStop({
        REDIS_URL: urlFor("127.0.0.1", [port()], { sslrootcert: file("ca.pem"), ...clientCertificate() })
      }),
      /^petstore: cannot start: REDIS_URL \(127\.0\.0\.1:\d+\): TLS: the server's certificate does not name this host/
    )
  }, 120_000)

  it("no client certificate where Redis asks for one: stops with one line", async () => {
    expectOneLine(
      await startAndStop({ REDIS_URL: urlFor("localhost", [port()], { sslrootcert: file("ca.pem") }) }),
      /^petstore: cannot start: REDIS_URL \(localhost:\d+\): TLS: Redis refused this client's certificate, or wants one \(sslcert, sslkey\)/
    )
  }, 120_000)

  it("the ACL user's wrong password: stops with one line, the password not in it", async () => {
    const url = urlFor("localhost", [port()], { sslrootcert: file("ca.pem"), ...clientCertificate() })
    expectOneLine(
      await startAndStop({ REDIS_URL: url.replace(QUOTA_USER_PASSWORD, "not-the-password") }),
      /^petstore: cannot start: REDIS_URL \(localhost:\d+\): cannot reach Redis: WRONGPASS/
    )
  }, 120_000)

  it("a TLS-only Cluster (its bus and replication on TLS too) through its seeds: serves", async () => {
    cluster = await startRedis({
      cluster: true,
      tls: { certFile: file("cluster.pem"), keyFile: file("cluster.key"), caFile: file("ca.pem") }
    })
    for (const node of cluster.nodes) {
      expect((await node.cli("acl", "setuser", "quotas", ...QUOTA_USER_ACL, `>${QUOTA_USER_PASSWORD}`)).trim()).toBe(
        "OK"
      )
    }
    await expectServesOn(cluster, {
      REDIS_TYPE: "cluster",
      REDIS_URL: urlFor("127.0.0.1", cluster.nodes.slice(0, 2).map((node) => node.port), {
        sslrootcert: file("ca.pem")
      })
    })
  }, 180_000)

  // Each stops before reaching any Redis: run together. The URL's parameters themselves are checked by the
  // configuration (redisConfig.system.test.ts); the files they name are read at start-up.
  it.concurrent.each([
    [
      "a CA file that is not there",
      () => `rediss://localhost:6390?sslrootcert=${file("absent.pem")}`,
      /^petstore: cannot start: REDIS_URL: sslrootcert .*absent\.pem: no such file$/
    ],
    [
      "a client key that is not there",
      () => `rediss://localhost:6390?sslcert=${file("client.pem")}&sslkey=${file("absent.key")}`,
      /^petstore: cannot start: REDIS_URL: sslkey .*absent\.key: no such file$/
    ]
  ])("%s: stops with one line naming it", async (_, url, pattern) => {
    expectOneLine(await startAndStop({ REDIS_URL: url(), REDIS_TYPE: "cluster" }), pattern)
  }, 120_000)
})
