import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig, formatConfigError } from "./config.ts"
import { ServerLive } from "./server.ts"

const main = Layer.launch(ServerLive.pipe(Layer.provide(AppConfig.layer))).pipe(
  Effect.catchTag("ConfigError", (error) =>
    Effect.sync(() => {
      process.stderr.write(`petstore: invalid configuration: ${formatConfigError(error)}\n`)
      process.exit(2)
    }))
)

NodeRuntime.runMain(main)
