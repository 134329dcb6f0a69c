import type { ChildProcess } from "node:child_process"
import { connect } from "node:net"
import { ADMIN_TOKEN } from "./testServer.ts"
import { freePort, type ServerProcess, spawnServer } from "./process.ts"

export { ADMIN_TOKEN }

export interface StartedProcess {
  readonly server: ServerProcess
  readonly port: number
  readonly origin: string
  readonly admin: string
  /** A new API key through the admin API of this process. */
  readonly createKey: (
    plan: "free" | "pro" | "business" | "enterprise",
    limits?: { perMinute: number; perDay: number }
  ) => Promise<string>
}

/**
 * Spawns a real server process on free ports with an admin listener and waits,
 * within `timeoutMs`, until `/readyz` answers 200. Throws with the process's
 * output when it exits or does not become ready.
 */
export const startServerProcess = async (env: Record<string, string>, timeoutMs = 30_000): Promise<StartedProcess> => {
  const [port, adminPort] = [await freePort(), await freePort()]
  const server = spawnServer({ PORT: String(port), ADMIN_PORT: String(adminPort), ADMIN_TOKEN, HOST: "127.0.0.1", ...env })
  const origin = `http://127.0.0.1:${port}`
  const admin = `http://127.0.0.1:${adminPort}`
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`the server exited (${server.child.exitCode ?? server.child.signalCode}) before it was ready:\n${server.output()}`)
    }
    const ready = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)
    if (ready) {
      return {
        server,
        port,
        origin,
        admin,
        createKey: async (plan, limits) => {
          const response = await fetch(`${admin}/admin/keys`, {
            method: "POST",
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
            body: JSON.stringify({ plan, ...(limits ? { limits } : {}) }),
            signal: AbortSignal.timeout(10_000)
          })
          if (response.status !== 201) throw new Error(`key creation answered ${response.status}: ${await response.text()}`)
          return ((await response.json()) as { key: string }).key
        }
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await server.stop()
  throw new Error(`the server was not ready within ${timeoutMs} ms:\n${server.output()}`)
}

/** How a TCP connection attempt to the port ended: accepted, or refused with an error code. */
export const tryConnect = (port: number, timeoutMs = 2_000): Promise<"accepted" | string> =>
  new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port })
    const timer = setTimeout(() => {
      socket.destroy()
      resolve("timeout")
    }, timeoutMs)
    socket.once("connect", () => {
      clearTimeout(timer)
      socket.destroy()
      resolve("accepted")
    })
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      resolve(error.code ?? "error")
    })
  })

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
