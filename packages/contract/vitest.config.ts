import { configDefaults, defineConfig } from "vitest/config"

// The lanes of @petstore/test-support/lanes, written out: the contract cannot depend on the test support, which
// depends on it.
export default defineConfig({
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "fast",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "**/*.system.test.ts"]
        }
      },
      {
        extends: true,
        test: {
          name: "system",
          include: ["test/**/*.system.test.ts"],
          // The compiled server, current, for the server process the installed client talks to.
          globalSetup: ["../test-support/src/serverBuild.ts"]
        }
      }
    ]
  }
})
