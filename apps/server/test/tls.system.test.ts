/**
 * TLS to PostgreSQL as managed services require it, with libpq's parameters in
 * DATABASE_URL. The test makes a CA, a server certificate naming `localhost`
 * only, a client certificate and a second, unrelated CA (openssl), and starts a
 * PostgreSQL cluster of its own (initdb, on a free port) that accepts TLS only:
 * - `sslmode=verify-full` with the right `sslrootcert` serves;
 * - with the other CA, or through `127.0.0.1` (a name the certificate does not
 *   carry), the server stops with one line saying why;
 * - a role that must show a client certificate gets in with `sslcert`/`sslkey`;
 * - `sslmode=require` against a PostgreSQL without TLS stops: TLS refused.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  freePort,
  makeTestCertificates,
  postgresAdminUrl,
  type PostgresCluster,
  postgresBinDir,
  serverEntry,
  startPostgresCluster,
  startServerProcess
} from "@petstore/test-support"
import { needsPostgres } from "./support/databases.ts"

const certificates = makeTestCertificates()
const { file, makeCa, makeCert } = certificates

let cluster: PostgresCluster | undefined
let port = 0

const urlFor = (host: string, user: string, params: Record<string, string>) =>
  `postgres://${user}@${host}:${port}/petstore?${new URLSearchParams(params).toString()}`

/** The server's start-up, run to its end: exit code and stderr. */
const startAndStop = async (env: Record<string, string>) =>
  spawnSync(process.execPath, [serverEntry()], {
    env: {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
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
}

describe.runIf(postgresBinDir() !== undefined || process.env.CI === "true")(
  "TLS to PostgreSQL with libpq's parameters",
  needsPostgres,
  () => {
    beforeAll(async () => {
      makeCa("ca")
      makeCa("other-ca")
      makeCert("server", "ca", "/CN=localhost", "DNS:localhost")
      makeCert("client", "ca", "/CN=certuser")
      port = await freePort()
      cluster = await startPostgresCluster({
        address: "127.0.0.1",
        allow: "127.0.0.1/32",
        port,
        settings: ["ssl = on", "ssl_cert_file = 'server.pem'", "ssl_key_file = 'server.key'", "ssl_ca_file = 'ca.pem'"],
        // TLS only: no `host` line, so a connection without TLS is refused.
        hba: ["hostssl all certuser 127.0.0.1/32 cert", "hostssl all all 127.0.0.1/32 trust"],
        files: {
          "server.pem": readFileSync(file("server.pem"), "utf8"),
          "server.key": readFileSync(file("server.key"), "utf8"),
          "ca.pem": readFileSync(file("ca.pem"), "utf8")
        }
      })
      execFileSync("runuser", [
        "-u",
        "postgres",
        "--",
        join(postgresBinDir()!, "psql"),
        "-h",
        cluster.dir,
        "-p",
        String(port),
        "-U",
        "postgres",
        "-qc",
        "CREATE ROLE certuser LOGIN SUPERUSER",
        "-c",
        "CREATE DATABASE petstore"
      ])
    }, 120_000)
    afterAll(async () => {
      await cluster?.destroy()
      certificates.remove()
    })

    it("verify-full with the CA that signed the server's certificate: serves", async () => {
      const started = await startServerProcess({
        DATABASE_URL: urlFor("localhost", "postgres", { sslmode: "verify-full", sslrootcert: file("ca.pem") })
      })
      try {
        expect((await fetch(`${started.origin}/readyz`)).status).toBe(200)
      } finally {
        await started.server.stop()
      }
    }, 120_000)

    it("verify-full with another CA: stops with one line, the certificate not trusted", async () => {
      expectOneLine(
        await startAndStop({
          DATABASE_URL: urlFor("localhost", "postgres", { sslmode: "verify-full", sslrootcert: file("other-ca.pem") })
        }),
        /^petstore: cannot start: DATABASE_URL \(localhost:\d+\/petstore\): TLS: the server's certificate is not trusted/
      )
    }, 120_000)

    it(
      "verify-full through a host name the certificate does not carry: stops with one line naming the host name",
      async () => {
        expectOneLine(
          await startAndStop({
            DATABASE_URL: urlFor("127.0.0.1", "postgres", { sslmode: "verify-full", sslrootcert: file("ca.pem") })
          }),
          /^petstore: cannot start: DATABASE_URL \(127\.0\.0\.1:\d+\/petstore\): TLS: the server's certificate does not name this host/
        )
      },
      120_000
    )

    it("verify-ca accepts the same certificate through 127.0.0.1: the chain is checked, not the name", async () => {
      const started = await startServerProcess({
        DATABASE_URL: urlFor("127.0.0.1", "postgres", { sslmode: "verify-ca", sslrootcert: file("ca.pem") })
      })
      await started.server.stop()
    }, 120_000)

    it("a role that must show a client certificate: accepted with sslcert and sslkey, refused without", async () => {
      const started = await startServerProcess({
        DATABASE_URL: urlFor("localhost", "certuser", {
          sslmode: "verify-full",
          sslrootcert: file("ca.pem"),
          sslcert: file("client.pem"),
          sslkey: file("client.key")
        })
      })
      await started.server.stop()
      expectOneLine(
        await startAndStop({
          DATABASE_URL: urlFor("localhost", "certuser", { sslmode: "verify-full", sslrootcert: file("ca.pem") })
        }),
        /^petstore: cannot start: DATABASE_URL \(localhost:\d+\/petstore\): .*certificate/
      )
    }, 120_000)

    it("sslmode=require against a PostgreSQL without TLS: stops with one line, TLS refused", async () => {
      const plain = new URL(postgresAdminUrl!)
      expectOneLine(
        await startAndStop({
          DATABASE_URL: `postgres://${plain.username}@${plain.host}${plain.pathname}?sslmode=require`
        }),
        /^petstore: cannot start: DATABASE_URL \(.*\): TLS refused/
      )
    }, 120_000)

    it("a parameter the server does not support: stops with one line naming it", async () => {
      expectOneLine(
        await startAndStop({
          DATABASE_URL: urlFor("localhost", "postgres", { sslmode: "verify-full", sslcompression: "1" })
        }),
        /^petstore: cannot start: DATABASE_URL: the parameter sslcompression is not supported/
      )
    }, 120_000)
  }
)
