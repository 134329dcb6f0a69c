import { missingTool } from "@petstore/test-support"
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { onPath, read, root, serverVariables, shutdownFacts } from "./repository.ts"

const analyze = onPath("systemd-analyze")
const unitPath = join(root, "deploy/systemd/petstore.service")
const settings = (key: string) =>
  read("deploy/systemd/petstore.service").split("\n").filter((line) => line.startsWith(`${key}=`)).map((line) =>
    line.slice(key.length + 1)
  )

describe.skipIf(analyze === undefined && missingTool("systemd-analyze is not on PATH (Debian's systemd)").skip)(
  "the systemd unit",
  () => {
    it("passes systemd-analyze verify with nothing to say", () => {
      const result = spawnSync(analyze!, ["verify", unitPath], { encoding: "utf8" })
      expect(result.stderr + result.stdout).toBe("")
      expect(result.status).toBe(0)
    })

    it("is hardened: a dynamic user, no privileges, a read-only system", () => {
      for (
        const [key, value] of Object.entries({
          DynamicUser: "yes",
          NoNewPrivileges: "yes",
          ProtectSystem: "strict",
          ProtectHome: "yes",
          PrivateTmp: "yes",
          CapabilityBoundingSet: "",
          RestrictSUIDSGID: "yes"
        })
      ) expect(settings(key), key).toEqual([value])
    })

    it("stops within the arithmetic of docs/fleet.md, and never restarts a configuration error", () => {
      const variables = Object.fromEntries(
        settings("Environment").map((line) => line.split("=", 2) as [string, string])
      )
      const drain = Number(variables.SHUTDOWN_DRAIN_SECONDS)
      const { poolCloseSeconds, requestTimeoutSeconds } = shutdownFacts()
      expect(Number(settings("TimeoutStopSec")[0])).toBeGreaterThanOrEqual(
        drain + requestTimeoutSeconds + poolCloseSeconds
      )
      expect(settings("KillSignal")).toEqual(["SIGTERM"])
      expect(settings("RestartPreventExitStatus")).toEqual(["2"])
    })

    it("sets only variables the server reads, and takes its secrets as credentials", () => {
      // Node's own: the environment it runs in, and the heap sizing docs/operations.md's "Memory" ships.
      const known = new Set([...serverVariables(), "NODE_ENV", "NODE_OPTIONS"])
      const variables = Object.fromEntries(
        settings("Environment").map((line) => {
          // systemd takes `"NAME=value with spaces"` quoted whole.
          const unquoted = line.replace(/^"(.*)"$/, "$1")
          const at = unquoted.indexOf("=")
          return [unquoted.slice(0, at), unquoted.slice(at + 1)] as [string, string]
        })
      )
      for (const name of Object.keys(variables)) expect(known, name).toContain(name)
      expect(variables.ADMIN_TOKEN_FILE).toBe("%d/admin-token")
      expect(variables.DATABASE_URL_FILE).toBe("%d/database-url")
      expect(settings("LoadCredential")).toEqual([
        "admin-token:/etc/petstore/admin-token",
        "database-url:/etc/petstore/database-url"
      ])
    })
  }
)
