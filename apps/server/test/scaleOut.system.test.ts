/**
 * The scale-out a platform team needs: 30 server processes behind one
 * transaction-mode PgBouncer, against a PostgreSQL (a cluster of the test's
 * own, initdb on a free port) whose `max_connections` is 20: far below 30
 * processes × (a pool of 2 + a listening connection) = 90 client connections.
 * PgBouncer holds at most 10 server connections; every process serves.
 * Cheap on purpose: pools of 2, one request burst per process.
 */
import { afterAll, describe, expect, it } from "vitest"
import {
  json,
  pgbouncerBinary,
  postgresBinDir,
  send,
  startPgBouncer,
  type PgBouncer,
  type PostgresCluster,
  startPostgresCluster,
  startServerProcess,
  type StartedProcess,
  freePort
} from "@petstore/test-support"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { needsPostgres } from "./support/databases.ts"

const PROCESSES = 30
const POOL_SIZE = 2
const MAX_CONNECTIONS = 20
const SERVER_CONNECTIONS = 10

let cluster: PostgresCluster | undefined
let bouncer: PgBouncer | undefined
const processes: Array<StartedProcess> = []
afterAll(async () => {
  await Promise.all(processes.map((started) => started.server.stop()))
  await bouncer?.stop()
  await cluster?.destroy()
}, 120_000)

describe.runIf((postgresBinDir() !== undefined && pgbouncerBinary() !== undefined) || process.env.CI === "true")(
  `${PROCESSES} server processes behind one PgBouncer, on a PostgreSQL with max_connections = ${MAX_CONNECTIONS}`,
  needsPostgres,
  () => {
    it("all of them serve", async () => {
      const port = await freePort()
      cluster = await startPostgresCluster({
        address: "127.0.0.1",
        allow: "127.0.0.1/32",
        port,
        settings: [`max_connections = ${MAX_CONNECTIONS}`]
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
        "CREATE DATABASE petstore"
      ])
      bouncer = await startPgBouncer({
        host: "127.0.0.1",
        port,
        users: ["postgres"],
        defaultPoolSize: SERVER_CONNECTIONS
      })
      const env = {
        DATABASE_URL: bouncer.through(cluster.url("petstore")),
        DATABASE_POOL_SIZE: String(POOL_SIZE),
        DATABASE_PREPARED_STATEMENTS: "false"
      }
      // The first migrates; the others start together.
      processes.push(await startServerProcess(env, 600_000))
      processes.push(
        ...await Promise.all(Array.from({ length: PROCESSES - 1 }, () => startServerProcess(env, 600_000)))
      )
      const key = await processes[0]!.createKey("enterprise", { perMinute: 1_000_000, perDay: 10_000_000 })
      const answers = await Promise.all(
        processes.flatMap((started) =>
          Array.from(
            { length: 4 },
            () =>
              send(`${started.origin}/v1/pets?limit=5`, { headers: json(key), signal: AbortSignal.timeout(60_000) })
                .then((answer) => answer.status, (error) => `${String(error)}`)
          )
        )
      )
      expect(answers.filter((status) => status !== 200)).toEqual([])
      const serverConnections = Number(
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
          "-Atc",
          "SELECT count(*) FROM pg_stat_activity WHERE datname = 'petstore'"
        ], { encoding: "utf8" }).trim()
      )
      console.info(
        `${PROCESSES} processes × pool ${POOL_SIZE} served through ${serverConnections} PostgreSQL connections (max_connections ${MAX_CONNECTIONS})`
      )
      expect(serverConnections).toBeLessThanOrEqual(SERVER_CONNECTIONS)
    }, 900_000)
  }
)
