import { PGlite } from "@electric-sql/pglite"
import { type Driver, INT8_OID, parseInt8, type RunQuery } from "./Driver.ts"

/**
 * A text parameter as UTF-8 can carry it: a lone surrogate becomes U+FFFD, as
 * postgres.js's encoding makes it. PGlite sizes a parameter by its own count
 * of bytes, which a lone surrogate throws off: the end of the text is cut (an
 * array literal loses its closing brace and the statement fails).
 */
const wellFormed = (value: unknown) => typeof value === "string" ? value.replace(LONE_SURROGATE, "\ufffd") : value

/** With the `u` flag a surrogate range matches only surrogates that are not half of a pair. */
const LONE_SURROGATE = /[\ud800-\udfff]/gu

/**
 * PostgreSQL's shared memory sized for one embedded connection. initdb writes
 * `shared_buffers = 128MB` and `max_connections = 100` into the data folder's
 * postgresql.conf, and PGlite's engine touches the whole buffer pool as it
 * starts: 151 MiB of its WebAssembly memory resident at idle, 27 with these
 * (docs/operations.md, "Memory"). `-c` on the command line outranks
 * postgresql.conf, so a folder made before this opens with them too and
 * nothing in it is rewritten (PGlite's `postgresqlconf` option would overwrite
 * the file). The engine runs one backend (`--single`); max_connections=5 buys
 * only ~2 MiB, and the lock table it also sizes still let one transaction
 * hold 6,000 locks (3,000 tables created). A page missed in the 16 MB of
 * buffers is read from the operating system's file cache.
 * `startParams` replaces PGlite's own list, hence the spread.
 */
const startParams = [
  ...PGlite.defaultStartParams,
  "-c",
  "shared_buffers=16MB",
  "-c",
  "max_connections=5"
]

/** PGlite, the embedded PostgreSQL: in memory without `dataDir`, else in that directory. */
export const pgliteDriver = async (dataDir: string | undefined): Promise<Driver> => {
  const db = await PGlite.create(dataDir, { parsers: { [INT8_OID]: parseInt8 }, startParams })
  const run = (runner: Pick<PGlite, "query">): RunQuery => async (text, values) =>
    (await runner.query<Record<string, unknown>>(text, (values as Array<unknown>).map(wellFormed))).rows
  return {
    kind: "pglite",
    query: run(db),
    transaction: (body) => db.transaction((tx) => body(run(tx))),
    // One engine in this process, no connection to replace: a statement runs to its end.
    abandon: () => {},
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close()
  }
}
