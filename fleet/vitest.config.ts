import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One fleet for the whole file; each test states its own bound.
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000
  }
})
