import { describe, expect, it } from "vitest"
import { read } from "./repository.ts"

/**
 * The Node heap sizing docs/operations.md ("Memory") ships is the same in every launcher: `pnpm start`, the
 * server image and the systemd unit; the bench reads it from the `start` script, so what it measures is this.
 * Two parts: `NODE_OPTIONS` defaults (the young generation), which a caller's `NODE_OPTIONS` extends or replaces,
 * and flags on `node`'s command line (the old generation's growing factor), which Node refuses in `NODE_OPTIONS`.
 */
const startScript = JSON.parse(read("package.json")).scripts.start as string
const environment = /NODE_OPTIONS=\\?"([^"$]*)/.exec(startScript)?.[1]?.trim()
const commandLine = /\bnode((?: --[^ ]+)*) scripts\/runBuilt\.js/.exec(startScript)?.[1]?.trim()

describe("the heap sizing every launcher ships", () => {
  it("is given by `pnpm start`: NODE_OPTIONS defaults before the caller's, so that the caller's flags win", () => {
    expect(environment).toMatch(/^--max-semi-space-size=\d+$/)
    expect(commandLine).toMatch(/^--heap-growing-percent=\d+$/)
    expect(startScript).toContain(`NODE_OPTIONS="${environment} $NODE_OPTIONS"`)
  })

  it("is the server image's NODE_OPTIONS and entrypoint", () => {
    const server = read("deploy/images/Containerfile").split(/^FROM .* AS server$/m)[1]!
    expect(server).toContain(`ENV NODE_OPTIONS="${environment}"`)
    expect(server).toContain(`ENTRYPOINT ["node", "${commandLine}", "dist/main.js"]`)
  })

  it("is the systemd unit's NODE_OPTIONS and command line", () => {
    const lines = read("deploy/systemd/petstore.service").split("\n")
    expect(lines).toContain(`Environment="NODE_OPTIONS=${environment}"`)
    expect(lines).toContain(`ExecStart=/usr/bin/node ${commandLine} /opt/petstore/apps/server/dist/main.js`)
  })
})
