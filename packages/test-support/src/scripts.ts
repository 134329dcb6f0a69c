import { spawn } from "node:child_process"

export interface ScriptOutcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a Node script as its own process, to its end, with only `PATH` and
 * `env` in its environment. Asynchronously, so that a server running in the
 * test's own process keeps answering the script meanwhile.
 */
export const runScript = (path: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<ScriptOutcome>((resolve, reject) => {
    const child = spawn(process.execPath, [path, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })
