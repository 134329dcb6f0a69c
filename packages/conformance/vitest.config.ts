import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The real-server suites wait out a minute window's Retry-After once; everything else takes seconds.
    testTimeout: 180_000,
    hookTimeout: 150_000,
    // Mostly waiting on sockets and Retry-After, but each file first boots a server with an embedded
    // database, seconds of CPU each: three at a time keeps those boots from starving one another.
    maxWorkers: 3,
    // Each deviation runs against a fixture of its own; they all run at once.
    maxConcurrency: 64
  }
})
