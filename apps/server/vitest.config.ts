import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Each suite starts real listeners and a database; PGlite alone takes seconds to open.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share the machine's two cores with PostgreSQL; one file at a time keeps timings honest.
    fileParallelism: false
  }
})
