import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The image test builds and runs containers: `pnpm test:images` (vitest.images.config.ts), not `pnpm test`.
    exclude: ["test/images.system.test.ts"],
    // Timeouts catch hangs, not slow machines: one test starts a real server.
    testTimeout: 300_000,
    hookTimeout: 400_000
  }
})
