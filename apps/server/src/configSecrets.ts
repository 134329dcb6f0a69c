import { ConfigProvider, Effect } from "effect"
import { readFileSync, statSync } from "node:fs"

/** The variables that hold secrets: each may instead name a file that holds it, as `NAME_FILE`. */
export const SECRET_VARIABLES = ["ADMIN_TOKEN", "DATABASE_URL", "DATABASE_DIRECT_URL", "REDIS_URL"] as const
const SECRET_FILE_MAX_BYTES = 64 * 1024

/**
 * Secrets from files, as official images take them (`POSTGRES_PASSWORD_FILE`): Kubernetes and Compose mount a
 * secret as a file, so it need not sit in the environment, where `podman inspect` and `/proc/<pid>/environ`
 * show it. `NAME_FILE` names a regular file of at most 64 KiB whose contents, less one trailing newline, are
 * `NAME`'s value, checked as `NAME` is. Setting both, or a file that cannot be read, stops the start-up with
 * one line naming `NAME_FILE`.
 */
export const withSecretFiles = (provider: ConfigProvider.ConfigProvider): ConfigProvider.ConfigProvider =>
  ConfigProvider.make((path) => {
    const name = path.length === 1 ? SECRET_VARIABLES.find((secret) => secret === path[0]) : undefined
    if (name === undefined) return provider.load(path)
    return Effect.gen(function*() {
      const [value, file] = [yield* provider.load([name]), yield* provider.load([`${name}_FILE`])]
      if (file === undefined || file._tag !== "Value") return value
      if (value !== undefined) {
        return yield* new ConfigProvider.SourceError({ message: `${name}_FILE: ${name} is set too; set one of them` })
      }
      return ConfigProvider.makeValue(yield* readSecretFile(`${name}_FILE`, file.value))
    })
  })

const readSecretFile = (variable: string, path: string) =>
  Effect.try({
    try: () => {
      const stats = statSync(path)
      if (!stats.isFile()) throw new Error("not a regular file")
      if (stats.size > SECRET_FILE_MAX_BYTES) throw new Error(`larger than ${SECRET_FILE_MAX_BYTES} bytes`)
      return readFileSync(path, "utf8").replace(/\r?\n$/, "")
    },
    catch: (error) =>
      new ConfigProvider.SourceError({
        message: `${variable}: cannot read ${path}: ${
          (error as NodeJS.ErrnoException).code ?? (error as Error).message
        }`
      })
  })
