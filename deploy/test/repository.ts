import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { delimiter, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseAllDocuments } from "yaml"

/** The repository's root, and a file in it as text. */
export const root = fileURLToPath(new URL("../../", import.meta.url))
export const read = (path: string) => readFileSync(join(root, path), "utf8")

export const onPath = (command: string): string | undefined =>
  (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(dir, command)).find(
    existsSync
  )

/**
 * Every variable the server reads: the names config.ts hands to `Config`, and `NAME_FILE` for each secret
 * (`SECRET_VARIABLES`, in configSecrets.ts).
 */
export const serverVariables = (): ReadonlySet<string> => {
  const source = read("apps/server/src/config.ts")
  const names = [...source.matchAll(/\(\s*"([A-Z][A-Z0-9_]+)"\s*\)|,\s*"([A-Z][A-Z0-9_]+)"\s*\)/g)].map((match) =>
    match[1] ?? match[2]!
  )
  const secrets = /SECRET_VARIABLES = \[([^\]]*)\]/.exec(read("apps/server/src/configSecrets.ts"))![1]!.match(
    /[A-Z_]+/g
  )!
  return new Set([...names, ...secrets.map((name) => `${name}_FILE`)])
}

/** The server's own bounds that the stop timeouts add up (docs/fleet.md, "Shutdown against the balancer's drain"). */
export const shutdownFacts = () => ({
  requestTimeoutSeconds: Number(/requestTimeout: (\d+)_000/.exec(read("apps/server/src/server.ts"))![1]),
  poolCloseSeconds: Number(/client\.end\(\{ timeout: (\d+) \}\)/.exec(read("apps/server/src/db/postgresDriver.ts"))![1])
})

/** The memory docs/operations.md reports ("Memory"): idle, and the top of the range under a steady load. */
export const measuredMemoryMiB = () => {
  const readme = read("docs/operations.md")
  return {
    idle: Number(/holds about (\d+) MiB resident idle/.exec(readme)![1]),
    underLoad: Number(/steady soak it holds \d+–(\d+) MiB/.exec(readme.replace(/\s+/g, " "))![1])
  }
}

export type KubernetesObject = {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: { readonly name: string; readonly annotations?: Record<string, string> }
  readonly spec?: any
  readonly data?: Record<string, string>
}

/** `kubectl kustomize <folder>`: the objects it renders. */
export const kustomize = (kubectl: string, folder: string): ReadonlyArray<KubernetesObject> =>
  parseAllDocuments(execFileSync(kubectl, ["kustomize", join(root, folder)], { encoding: "utf8" }))
    .map((document) => document.toJS() as KubernetesObject)
