import { defineConfig } from "vitest/config"
import { lanes } from "@petstore/test-support/lanes"

export default defineConfig({
  test: {
    projects: lanes,
    // The compiled server, current, for the server processes the k6 suite starts.
    globalSetup: ["@petstore/test-support/serverBuild"],
    // k6 runs take minutes: each test sets its own timeout from the run it makes.
    hookTimeout: 400_000
  }
})
