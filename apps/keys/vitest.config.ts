import { defineConfig } from "vitest/config"
import { lanes } from "@petstore/test-support/lanes"

export default defineConfig({
  test: {
    projects: lanes,
    globalSetup: ["@petstore/test-support/serverBuild", "test/buildOnce.ts"],
    // Each command is a process of its own, against a real server process on PGlite, which takes seconds to open.
    // The timeout is there to catch a hang, not to judge the machine: on two cores at load 20, one command took
    // 10–40 s, and a test runs up to five.
    testTimeout: 300_000,
    hookTimeout: 400_000
  }
})
