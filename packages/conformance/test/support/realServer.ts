import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import postgres from "postgres"

/** The server this repository ships, run as operators run it. The suite itself only ever talks HTTP to it. */
const serverMain = fileURLToPath(new URL("../../../../apps/server/src/main.ts", import.meta.url))

const ADMIN_TOKEN = "conformance-admin-token-not-a-secret"

/** PostgreSQL the tests may use, from DATABASE_URL: each run creates a database of its own there and drops it. */
export const postgresAdminUrl = process.env.DATABASE_URL

export const freePort = async () => {
  const probe = createServer().listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as { port: number }
  probe.close()
  await once(probe, "close")
  return port
}

const createDatabase = async (adminUrl: string) => {
  const name = `petstore_conformance_${randomBytes(6).toString("hex")}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }
  }
}

export interface RealServer {
  readonly baseUrl: string
  readonly createKey: (plan: string, limits?: { perMinute: number; perDay: number }) => Promise<string>
  readonly output: () => string
  readonly stop: () => Promise<void>
}

export const startRealServer = async (backend: "pglite" | "postgres"): Promise<RealServer> => {
  if (backend === "postgres" && postgresAdminUrl === undefined) {
    throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL run of the conformance suite cannot run")
  }
  const database = backend === "postgres" ? await createDatabase(postgresAdminUrl!) : undefined
  const [port, adminPort] = [await freePort(), await freePort()]
  const child: ChildProcess = spawn(process.execPath, [serverMain], {
    env: {
      PATH: process.env.PATH ?? "",
      LOG_LEVEL: "Warn",
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN,
      DATA_DIR: ":memory:",
      ...(database === undefined ? {} : { DATABASE_URL: database.url })
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit")
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
      await exited
      clearTimeout(timer)
    }
    await database?.drop()
  }

  const origin = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  while (true) {
    if (child.exitCode !== null) {
      await stop()
      throw new Error(`the server exited with ${child.exitCode}: ${output}`)
    }
    const healthy = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)
    if (healthy) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`the server did not answer /healthz within 60 s: ${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }

  return {
    baseUrl: `${origin}/v1`,
    createKey: async (plan, limits) => {
      const response = await fetch(`http://127.0.0.1:${adminPort}/admin/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ plan, name: `conformance ${plan}`, ...(limits === undefined ? {} : { limits }) })
      })
      if (response.status !== 201) throw new Error(`key creation answered ${response.status}: ${await response.text()}`)
      return ((await response.json()) as { key: string }).key
    },
    output: () => output,
    stop
  }
}
