import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"

export const serverMain = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

/** A port nobody listens on right now. */
export const freePort = async () => {
  const probe = createServer()
  probe.listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as { port: number }
  probe.close()
  await once(probe, "close")
  return port
}

export interface ServerProcess {
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/** The server as operators run it: its own process, configured by environment. */
export const spawnServer = (env: Record<string, string>): ServerProcess => {
  const child = spawn(process.execPath, [serverMain], {
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "Warn", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, "exit")
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
      await exited
      clearTimeout(timer)
    }
  }
}
