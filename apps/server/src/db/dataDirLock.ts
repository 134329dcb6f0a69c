import { Effect } from "effect"
import { rmSync } from "node:fs"
import { connect, createServer, type Server } from "node:net"
import { join } from "node:path"
import { StartupError } from "../startupError.ts"

/** The lock's file in `DATA_DIR`; PGlite ignores it. */
export const DATA_DIR_LOCK = ".petstore.lock"

const errorCode = (cause: unknown) => (cause as NodeJS.ErrnoException | undefined)?.code

const listenOn = (path: string) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer((socket) => socket.destroy())
    server.once("error", reject)
    // `exclusive`: in a cluster worker, a listen is otherwise shared through the primary, and would lock nothing.
    server.listen({ path, exclusive: true }, () => {
      server.off("error", reject)
      // The lock never keeps the process alive by itself.
      server.unref()
      resolve(server)
    })
  })

/** Whether a live process listens on the socket: a dead holder's leftover file refuses the connection. */
const isHeld = (path: string) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(path)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const takeLock = async (path: string): Promise<Server | "held" | undefined> => {
  try {
    return await listenOn(path)
  } catch (cause) {
    // Where a Unix socket cannot be made there (a path too long for one, a file system without them), the folder
    // is used unlocked, as it was before this lock: refusing to start for it would stop servers that ran.
    if (errorCode(cause) !== "EADDRINUSE") return undefined
  }
  if (await isHeld(path)) return "held"
  rmSync(path, { force: true })
  return listenOn(path).catch(() => "held" as const)
}

/**
 * One process at a time on a PGlite folder. PGlite takes no lock (its `postmaster.pid` names pid -42 in every
 * process): a second server on the same folder ran its own PostgreSQL on the same files, and either aborted
 * (`Aborted()`) or served beside the first, each overwriting the other's pages. The lock is a Unix socket in
 * the folder, listened on while the database is open, so the kernel says whether its holder lives: no pid that
 * a later process may reuse, and it holds across containers that share the volume. Released with the scope.
 */
export const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.promise(() => takeLock(join(dataDir, DATA_DIR_LOCK))).pipe(
      Effect.flatMap((lock) =>
        lock === "held"
          ? Effect.fail(
            new StartupError({
              message: `DATA_DIR (${dataDir}): another process holds this folder (a server already running on it?): ` +
                "stop it, or set DATA_DIR to another folder, or DATABASE_URL to use PostgreSQL instead"
            })
          )
          : Effect.succeed(lock)
      )
    ),
    (lock) =>
      Effect.promise(() => new Promise<void>((resolve) => lock === undefined ? resolve() : lock.close(() => resolve())))
  )
