import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import postgres from "postgres"
import { freePort } from "./ports.ts"

/** Debian's `pgbouncer` binary, or `PGBOUNCER`; undefined when neither is installed. */
export const pgbouncerBinary = (): string | undefined =>
  [process.env.PGBOUNCER, "/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((path) =>
    path !== undefined && existsSync(path)
  )

export interface PgBouncer {
  readonly port: number
  /** `url` (a `postgres://` URL of the PostgreSQL behind it) with PgBouncer's address in place of its host and port. */
  readonly through: (url: string) => string
  readonly log: () => string
  /** Runs a command on PgBouncer's admin console (`SHOW POOLS`, `SET pool_mode = 'session'`, …); returns its rows. */
  readonly admin: (command: string) => Promise<ReadonlyArray<Record<string, unknown>>>
  readonly stop: () => Promise<void>
}

export interface PgBouncerOptions {
  /** Where PostgreSQL listens. */
  readonly host: string
  readonly port: number
  /** Roles that may connect (trust authentication: PgBouncer still wants them listed). */
  readonly users: ReadonlyArray<string>
  readonly poolMode?: "transaction" | "session"
  readonly defaultPoolSize?: number
  /** Extra `[pgbouncer]` lines. */
  readonly settings?: ReadonlyArray<string>
}

/**
 * A real PgBouncer (Debian's `pgbouncer`) on a free loopback port, in
 * transaction mode unless told otherwise, in front of every database of one
 * PostgreSQL server. It refuses to run as root, so it runs as the `postgres` OS
 * user when the tests run as root.
 */
export const startPgBouncer = async (options: PgBouncerOptions): Promise<PgBouncer> => {
  const binary = pgbouncerBinary()
  if (binary === undefined) throw new Error("no pgbouncer binary: apt-get install pgbouncer (or set PGBOUNCER)")
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "petstore-pgbouncer-"))
  const logFile = join(dir, "pgbouncer.log")
  writeFileSync(join(dir, "userlist.txt"), options.users.map((user) => `"${user}" ""`).join("\n") + "\n")
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = host=${options.host} port=${options.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      `pool_mode = ${options.poolMode ?? "transaction"}`,
      `default_pool_size = ${options.defaultPoolSize ?? 20}`,
      "max_client_conn = 5000",
      `logfile = ${logFile}`,
      // The admin console, for the tests that change PgBouncer while it runs.
      `admin_users = ${options.users[0]}`,
      ...(options.settings ?? [])
    ].join("\n") + "\n"
  )
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const [uid, gid] = readFileSync("/etc/passwd", "utf8").split("\n").find((line) => line.startsWith("postgres:"))!
      .split(":").slice(2, 4)
    for (const file of ["", "pgbouncer.ini", "userlist.txt"]) chownSync(join(dir, file), Number(uid), Number(gid))
  }
  // setpriv execs PgBouncer itself (runuser would stay its parent and not pass signals on): stopping the child stops it.
  const [file, args] = asRoot
    ? ["setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", binary, join(dir, "pgbouncer.ini")]]
    : [binary, [join(dir, "pgbouncer.ini")]]
  const child: ChildProcess = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + output
  const stopChild = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGINT")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  }
  const onExit = () => child.kill("SIGKILL")
  process.once("exit", onExit)
  // Ready when it accepts connections.
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}):\n${log()}`)
    const accepted = await new Promise<boolean>((resolve) => {
      void import("node:net").then(({ connect }) => {
        const probe = connect({ host: "127.0.0.1", port }, () => (probe.destroy(), resolve(true)))
        probe.on("error", () => resolve(false))
      })
    })
    if (accepted) break
    if (Date.now() > deadline) {
      await stopChild()
      throw new Error(`pgbouncer did not listen within 30 s:\n${log()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    port,
    through: (url) => url.replace(/@[^/]+\//, `@127.0.0.1:${port}/`),
    log,
    admin: async (command) => {
      // The console speaks only the simple protocol: no type lookup at connect, one simple query.
      const adminConsole = postgres({
        host: "127.0.0.1",
        port,
        database: "pgbouncer",
        username: options.users[0],
        max: 1,
        fetch_types: false,
        onnotice: () => {}
      })
      try {
        return await adminConsole.unsafe(command).simple()
      } finally {
        await adminConsole.end({ timeout: 5 })
      }
    },
    stop: async () => {
      await stopChild()
      process.off("exit", onExit)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
