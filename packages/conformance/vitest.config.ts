import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The real-server suites wait out a minute window's Retry-After once; everything else takes seconds.
    testTimeout: 180_000,
    hookTimeout: 90_000,
    // Mostly waiting on sockets and Retry-After: run every file at once, whatever the number of cores.
    maxWorkers: 5,
    // Each deviation runs against a fixture of its own; they all run at once.
    maxConcurrency: 64
  }
})
