import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Each command is a process of its own, against a real server process on PGlite, which takes seconds to open.
    // The timeout is there to catch a hang, not to judge the machine: a CI run with three suites beside it on two
    // busy cores saw a test's three commands take over 30 s.
    testTimeout: 120_000,
    hookTimeout: 150_000
  }
})
