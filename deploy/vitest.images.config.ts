import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.system.test.ts"],
    // Building both images takes minutes on two cores (more at CI's load); each test states what it waits for.
    testTimeout: 300_000,
    hookTimeout: 1_500_000
  }
})
