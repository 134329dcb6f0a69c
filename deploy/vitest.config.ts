import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // `*.system.test.ts` (the image test builds and runs containers) is the system lane: `pnpm test:system`
    // (vitest.images.config.ts), not `pnpm test`.
    exclude: [...configDefaults.exclude, "**/*.system.test.ts"],
    // The compiled server, current, for the server process the alerts test starts.
    globalSetup: ["@petstore/test-support/serverBuild"],
    // Timeouts catch hangs, not slow machines: one test starts a real server.
    testTimeout: 300_000,
    hookTimeout: 400_000
  }
})
