import { PGlite } from "@electric-sql/pglite"
import { type Driver, INT8_OID, parseInt8, type RunQuery } from "./Driver.ts"

/** PGlite, the embedded PostgreSQL: in memory without `dataDir`, else in that directory. */
export const pgliteDriver = async (dataDir: string | undefined): Promise<Driver> => {
  const db = await PGlite.create(dataDir, { parsers: { [INT8_OID]: parseInt8 } })
  const run = (runner: Pick<PGlite, "query">): RunQuery => async (text, values) =>
    (await runner.query<Record<string, unknown>>(text, values as Array<unknown>)).rows
  return {
    kind: "pglite",
    query: run(db),
    transaction: (body) => db.transaction((tx) => body(run(tx))),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close()
  }
}
