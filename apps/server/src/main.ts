// Compiles schemas to plain functions on first use (~10% on schema-heavy requests, measured by the team);
// it must run before any schema is built, so it comes first. Unstable API, pinned with effect's version.
import "effect/schema/SchemaJITCompiler/enable"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, ConfigProvider, Effect, Exit, Layer, Runtime } from "effect"
import cluster from "node:cluster"
import { stopWithPrimary, superviseWorkers } from "./cluster.ts"
import { AppConfig, AppConfigShape, formatConfigError, withSecretFiles } from "./config.ts"
import { checkListeners, ServerLive } from "./server.ts"

/** One line naming the cause, for the operator; no stack trace, which would only bury it. */
const stop = (exitCode: number, line: string) =>
  Effect.sync(() => {
    process.stderr.write(`petstore: ${line}\n`)
    process.exit(exitCode)
  })

const refuseToStart = (line: string) => stop(2, `invalid configuration: ${line}`)

const main = Effect.gen(function*() {
  const config = yield* AppConfigShape
  // Workers share the ports through the primary, which has checked them already.
  if (cluster.isPrimary) yield* checkListeners(config)
  if (config.workers > 1 && cluster.isPrimary) return yield* superviseWorkers(config.workers)
  if (cluster.isWorker) stopWithPrimary()
  return yield* Layer.launch(ServerLive.pipe(Layer.provide(Layer.succeed(AppConfig, config))))
}).pipe(
  Effect.provideService(ConfigProvider.ConfigProvider, withSecretFiles(ConfigProvider.fromEnv())),
  Effect.catchTag("ConfigError", (error) => refuseToStart(formatConfigError(error))),
  Effect.catchTag("StartupError", (error) => stop(1, `cannot start: ${error.message}`))
)

/** SIGTERM and SIGINT interrupt the server; having shut down cleanly, it exits 0. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

NodeRuntime.runMain(main, { teardown })
