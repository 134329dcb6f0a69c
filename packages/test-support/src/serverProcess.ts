import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { createRequire } from "node:module"
import { join } from "node:path"
import { ADMIN_TOKEN, createKey, type CreatedTestKey } from "./keys.ts"
import { freePort } from "./ports.ts"
import type { KeyRole, Plan, QuotaLimits } from "@petstore/contract"

/**
 * The compiled server (`@petstore/server/dist/main`), which `pnpm start` and the image run, reached through its
 * package as the module `from` resolves it: by default the package whose tests run (their working directory); a
 * script run from elsewhere passes its own `import.meta.url`. Resolved there because this package cannot depend
 * on the server, whose tests depend on it.
 *
 * Compiled, not from source: a process started from `src/main.ts` also strips and loads some 400 TypeScript
 * modules, about 1.5 s of CPU against 0.3 s for the bundle, and the suites start hundreds of them. Suites that
 * spawn the server keep the build current with the `@petstore/test-support/serverBuild` global setup.
 */
export const serverEntry = (from: string = join(process.cwd(), "package.json")): string =>
  createRequire(from).resolve("@petstore/server/dist/main")

export interface ServerProcess {
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/** The server as operators run it: its own process, configured by environment. */
export const spawnServer = (env: Record<string, string>, entry: string = serverEntry()): ServerProcess => {
  const child = spawn(process.execPath, [entry], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "Warn", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  return asServerProcess(child, () => output)
}

/** A spawned server, stopped as operators stop it: SIGTERM, then SIGKILL if it has not exited within 10 s. */
export const asServerProcess = (child: ChildProcess, output: () => string): ServerProcess => ({
  child,
  output,
  stop: async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
    await exited
    clearTimeout(timer)
  }
})

export interface StartedProcess {
  readonly server: ServerProcess
  readonly port: number
  readonly origin: string
  readonly admin: string
  /** A new API key through the admin API of this process: a customer's unless `role` says otherwise. */
  readonly createKey: (plan: Plan, limits?: QuotaLimits, role?: KeyRole) => Promise<string>
  /** The same, with the key's id. */
  readonly createKeyWithId: (plan: Plan, limits?: QuotaLimits, role?: KeyRole) => Promise<CreatedTestKey>
}

/**
 * Spawns a real server process on free ports with an admin listener and waits,
 * within `timeoutMs`, until `/readyz` answers 200. Throws with the process's
 * output when it exits or does not become ready. The bound is generous: `pnpm test`
 * runs several packages' suites at once, and on two cores eight embedded
 * databases opening together took 65 s each (measured); at load 20 a keys-CLI
 * suite's server was not ready within 120 s.
 */
export const startServerProcess = async (
  env: Record<string, string>,
  timeoutMs = 300_000,
  entry: string = serverEntry()
): Promise<StartedProcess> => {
  let server: ServerProcess
  let port: number
  let adminPort: number
  // A port free when chosen may be taken before the server binds it (by another suite's listener): choose again.
  for (let attempt = 1;; attempt++) {
    port = await freePort()
    adminPort = await freePort()
    server = spawnServer(
      { PORT: String(port), ADMIN_PORT: String(adminPort), ADMIN_TOKEN, HOST: "127.0.0.1", ...env },
      entry
    )
    try {
      await waitUntilReady(server, `http://127.0.0.1:${port}/readyz`, timeoutMs)
      break
    } catch (error) {
      if (attempt >= 3 || !/:(\d+) is already in use/.test(server.output())) throw error
    }
  }
  const origin = `http://127.0.0.1:${port}`
  const admin = `http://127.0.0.1:${adminPort}`
  const withId = (plan: Plan, limits?: QuotaLimits, role?: KeyRole) => createKey(admin, plan, limits, ADMIN_TOKEN, role)
  return {
    server,
    port,
    origin,
    admin,
    createKeyWithId: withId,
    createKey: async (plan, limits, role) => (await withId(plan, limits, role)).key
  }
}

/**
 * Polls `url` until the status of its answer is one `ready` accepts (by
 * default a 2xx), within `timeoutMs`. Throws with the process's output when it
 * exits first, or stops it and throws when it is not ready in time.
 */
export const waitUntilReady = async (
  server: ServerProcess,
  url: string,
  timeoutMs: number,
  ready: (status: number) => boolean = (status) => status >= 200 && status < 300
): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(
        `the server exited (${
          server.child.exitCode ?? server.child.signalCode
        }) before it was ready:\n${server.output()}`
      )
    }
    const answered = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => ready(r.status), () => false)
    if (answered) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await server.stop()
  throw new Error(`the server was not ready within ${timeoutMs} ms:\n${server.output()}`)
}

/** Resolves with the exit code and signal, or with undefined if the process is still running after `timeoutMs`. */
export const waitForExit = (
  child: ChildProcess,
  timeoutMs: number
): Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number } | undefined> => {
  const started = Date.now()
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, afterMs: 0 })
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off("exit", onExit)
      resolve(undefined)
    }, timeoutMs)
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer)
      resolve({ code, signal, afterMs: Date.now() - started })
    }
    child.once("exit", onExit)
  })
}

/** Polls `check` every `intervalMs` until it returns true or `timeoutMs` passes; returns whether it did. */
export const eventually = async (check: () => Promise<boolean> | boolean, timeoutMs: number, intervalMs = 50) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
