import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // k6 runs take minutes: each test sets its own timeout from the run it makes.
    hookTimeout: 400_000
  }
})
