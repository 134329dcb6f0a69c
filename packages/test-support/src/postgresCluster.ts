import { execFile } from "node:child_process"
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
  appendFileSync,
  readFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { guardResource } from "./orphanGuard.ts"
import { inNamespace } from "./testNetwork.ts"

const run = promisify(execFile)

/** The binaries of the newest PostgreSQL under /usr/lib/postgresql (Debian's layout), or `PG_BINDIR`. */
export const postgresBinDir = (): string | undefined => {
  const fromEnv = process.env.PG_BINDIR
  if (fromEnv !== undefined && existsSync(join(fromEnv, "initdb"))) return fromEnv
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((entry) => /^\d+$/.test(entry)).sort((a, b) => Number(b) - Number(a))
  return versions.map((version) => join(root, version, "bin")).find((dir) => existsSync(join(dir, "initdb")))
}

/** Numeric uid and gid of an OS user, from /etc/passwd. */
const osUser = (name: string): { uid: number; gid: number } | undefined => {
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith(`${name}:`))
  if (line === undefined) return undefined
  const [, , uid, gid] = line.split(":")
  return { uid: Number(uid), gid: Number(gid) }
}

export interface PostgresCluster {
  /** The cluster's directory (its data directory is `data` in it, its socket is in it). */
  readonly dir: string
  /** `postgres://postgres@address:port/<database>`: trust authentication, for the test network only. */
  readonly url: (database: string) => string
  readonly address: string
  readonly port: number
  /** Stops the server; `immediate` is a crash (recovery from the WAL at the next start). */
  readonly stop: (mode: "fast" | "immediate") => Promise<void>
  readonly start: () => Promise<void>
  readonly log: () => string
  /** Stops the server if it runs and deletes the cluster's directory. */
  readonly destroy: () => Promise<void>
}

export interface PostgresClusterOptions {
  /** The address it listens on (and only there, besides its socket in its own directory). */
  readonly address: string
  /** Who may connect, as a CIDR: the test network. */
  readonly allow: string
  readonly port?: number
  /** The network namespace to run it in, so that it is a machine of the test network. */
  readonly namespace?: string
  /** Extra `postgresql.conf` lines. */
  readonly settings?: ReadonlyArray<string>
  /** `pg_hba.conf` lines in place of trust for `allow` (the socket stays trusted). */
  readonly hba?: ReadonlyArray<string>
  /** Files to put beside the data directory before it starts (certificates), owned by the server's OS user, mode 0600. */
  readonly files?: Readonly<Record<string, string>>
}

/**
 * A PostgreSQL cluster of its own in a temporary directory (`initdb`, `pg_ctl`),
 * run as the `postgres` OS user, since PostgreSQL refuses to run as root. The
 * machine's own PostgreSQL is not touched.
 */
export const startPostgresCluster = async (options: PostgresClusterOptions): Promise<PostgresCluster> => {
  const binDir = postgresBinDir()
  if (binDir === undefined) {
    throw new Error("no PostgreSQL binaries (initdb, pg_ctl) under /usr/lib/postgresql; set PG_BINDIR")
  }
  const owner = osUser("postgres")
  if (owner === undefined) throw new Error("no `postgres` OS user to run the test's PostgreSQL cluster as")
  const port = options.port ?? 5432
  const dir = mkdtempSync(join(tmpdir(), "petstore-pg-"))
  const dataDir = join(dir, "data")
  // Undone last first: the server stopped, then its directory removed.
  const forgetDir = guardResource({ kind: "directory", path: dir })
  const forgetServer = guardResource({ kind: "postgres", pgCtl: join(binDir, "pg_ctl"), dataDir })
  chownSync(dir, owner.uid, owner.gid)
  const logFile = join(dir, "postgres.log")
  const asPostgres = (command: string, args: ReadonlyArray<string>): [string, Array<string>] => {
    const direct: [string, Array<string>] = ["runuser", ["-u", "postgres", "--", join(binDir, command), ...args]]
    return options.namespace === undefined ? direct : inNamespace(options.namespace, direct[0], direct[1])
  }
  const exec = async (command: string, args: ReadonlyArray<string>) => {
    const [file, argv] = asPostgres(command, args)
    try {
      await run(file, argv, { cwd: dir, encoding: "utf8" })
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr ?? ""
      throw new Error(`${command} ${args.join(" ")}: ${stderr.trim() || String(error)}\n${readLog()}`)
    }
  }
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "")
  let running = false
  // After the test network's own exit handler has killed the server (it runs in a namespace), or anyway.
  const removeDir = () => {
    rmSync(dir, { recursive: true, force: true })
    forgetServer()
    forgetDir()
  }
  process.once("exit", removeDir)
  const start = async () => {
    await exec("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "start"])
    running = true
  }
  const stop = async (mode: "fast" | "immediate") => {
    await exec("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "-t", "60", "stop"])
    running = false
  }
  try {
    await exec("initdb", ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
    appendFileSync(
      join(dataDir, "postgresql.conf"),
      [
        `listen_addresses = '${options.address}'`,
        `port = ${port}`,
        `unix_socket_directories = '${dir}'`,
        ...(options.settings ?? [])
      ].join("\n") + "\n"
    )
    writeFileSync(
      join(dataDir, "pg_hba.conf"),
      ["local all all trust", ...(options.hba ?? [`host all all ${options.allow} trust`])].join("\n") + "\n"
    )
    for (const [name, content] of Object.entries(options.files ?? {})) {
      writeFileSync(join(dataDir, name), content, { mode: 0o600 })
      chownSync(join(dataDir, name), owner.uid, owner.gid)
    }
    await start()
  } catch (error) {
    process.off("exit", removeDir)
    removeDir()
    throw error
  }
  return {
    dir,
    url: (database) => `postgres://postgres@${options.address}:${port}/${database}`,
    address: options.address,
    port,
    stop,
    start,
    log: readLog,
    destroy: async () => {
      if (running) await stop("immediate").catch(() => undefined)
      process.off("exit", removeDir)
      removeDir()
    }
  }
}
