import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Each command is a process of its own, against a real server process on PGlite, which takes seconds to open.
    testTimeout: 30_000,
    hookTimeout: 150_000
  }
})
