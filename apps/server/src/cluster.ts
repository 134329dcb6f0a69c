import { Effect } from "effect"
import cluster from "node:cluster"

/**
 * The primary of `WORKERS=N`: forks N server processes that share the public
 * and admin ports (node:cluster hands out the connections), replaces a worker
 * that dies, and on shutdown passes SIGTERM on and waits for every worker.
 */
export const superviseWorkers = (count: number) =>
  Effect.gen(function*() {
    let stopping = false
    const fork = () => cluster.fork()
    cluster.on("exit", (worker, code, signal) => {
      if (stopping) return
      Effect.runFork(
        Effect.logWarning("worker died; starting another").pipe(
          Effect.annotateLogs({ pid: worker.process.pid, code, signal })
        )
      )
      // A worker that cannot start (e.g. the database is down) is retried at a calm pace.
      setTimeout(fork, 1_000)
    })
    for (let i = 0; i < count; i++) fork()
    yield* Effect.logInfo("workers started").pipe(Effect.annotateLogs({ workers: count }))
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        stopping = true
        const workers = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined)
        return Promise.all(workers.map((worker) =>
          new Promise<void>((resolve) => {
            if (worker.isDead()) return resolve()
            worker.once("exit", () => resolve())
            worker.process.kill("SIGTERM")
          })
        ))
      })
    )
    return yield* Effect.never
  }).pipe(Effect.scoped)

/** A worker whose primary is gone (killed, crashed) shuts down as on SIGTERM rather than serve on alone. */
export const stopWithPrimary = () => {
  cluster.worker?.once("disconnect", () => process.kill(process.pid, "SIGTERM"))
}
