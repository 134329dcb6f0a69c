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

/** PGlite, the embedded PostgreSQL: in memory without `dataDir`, else in that directory. */
export const pgliteDriver = async (dataDir: string | undefined): Promise<Driver> => {
  const db = await PGlite.create(dataDir, { parsers: { [INT8_OID]: parseInt8 } })
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
