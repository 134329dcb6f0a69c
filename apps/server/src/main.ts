// Compiles schemas to plain functions on first use (~10% on schema-heavy requests, measured by the team);
// it must run before any schema is built, so it comes first. Unstable API, pinned with effect's version.
import "effect/schema/SchemaJITCompiler/enable"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, ConfigProvider, Effect, Exit, Layer, Runtime } from "effect"
import cluster from "node:cluster"
import { stopWithPrimary, superviseWorkers } from "./cluster.ts"
import { AppConfig, AppConfigShape } from "./config.ts"
import { formatConfigError } from "./configDescription.ts"
import { withSecretFiles } from "./configSecrets.ts"
import { applyMigrations, openDrivers } from "./db/Database.ts"
import { checkListeners, HeldAddresses, holdListeners } from "./listeners.ts"
import { ServerLive } from "./server.ts"

/** One line naming the cause, for the operator; no stack trace, which would only bury it. */
const stop = (exitCode: number, line: string) =>
  Effect.sync(() => {
    process.stderr.write(`petstore: ${line}\n`)
    process.exit(exitCode)
  })

const refuseToStart = (line: string) => stop(2, `invalid configuration: ${line}`)

/**
 * `main.js migrate` (`pnpm migrate`): applies pending migrations through
 * DATABASE_DIRECT_URL, else DATABASE_URL (else the embedded database), and
 * exits 0 with one line, or 1 with one line naming the cause.
 */
const migrateCommand = Effect.gen(function*() {
  const config = yield* AppConfigShape
  const applied = yield* Effect.scoped(
    Effect.flatMap(openDrivers(config, "migrate"), (drivers) => applyMigrations(config, drivers))
  )
  process.stdout.write(`petstore: migrations applied: ${applied.join(", ") || "none pending"}\n`)
}).pipe(
  Effect.catchTag(
    "ConfigError",
    (error) => stop(1, `cannot migrate: invalid configuration: ${formatConfigError(error)}`)
  ),
  Effect.catchTag("StartupError", (error) => stop(1, `cannot migrate: ${error.message}`))
)

const serve = Effect.gen(function*() {
  const config = yield* AppConfigShape
  // Workers share the ports through the primary, which has checked them already.
  if (config.workers > 1 && cluster.isPrimary) {
    yield* checkListeners(config)
    return yield* superviseWorkers(config.workers)
  }
  if (cluster.isWorker) {
    stopWithPrimary()
    return yield* Layer.launch(ServerLive.pipe(Layer.provide(Layer.succeed(AppConfig, config))))
  }
  // One process: the addresses are bound before anything slow and held, answering 503, until the listeners
  // take them over, so a client is never refused or reset between the check and the listener.
  const held = Layer.effect(HeldAddresses, holdListeners(config))
  return yield* Layer.launch(
    ServerLive.pipe(Layer.provide(Layer.succeed(AppConfig, config)), Layer.provide(held))
  )
}).pipe(
  Effect.catchTag("ConfigError", (error) => refuseToStart(formatConfigError(error))),
  Effect.catchTag("StartupError", (error) => stop(1, `cannot start: ${error.message}`))
)

/** SIGTERM and SIGINT interrupt the server; having shut down cleanly, it exits 0. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

const command = process.argv[2]
if (command !== undefined && command !== "migrate") {
  process.stderr.write(
    `petstore: unknown command ${JSON.stringify(command)}: run with no argument to serve, or \`migrate\`\n`
  )
  process.exit(2)
}
// Both commands read secrets from files (`ADMIN_TOKEN_FILE`, `DATABASE_URL_FILE`, …) as from the environment.
const withSecrets = Effect.provideService(ConfigProvider.ConfigProvider, withSecretFiles(ConfigProvider.fromEnv()))
NodeRuntime.runMain(withSecrets(command === "migrate" ? migrateCommand : serve), { teardown })
