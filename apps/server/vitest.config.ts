import { defineConfig } from "vitest/config"
import { lanes } from "@petstore/test-support/lanes"

export default defineConfig({
  test: {
    // The fast lane's files share one worker and its modules (isolate: false): each file in a fresh process loaded
    // Effect, the server and PGlite's WebAssembly again, about 2 s of CPU a file. They run one at a time either way.
    // The system lane runs two files at a time: its suites mostly wait (on failovers, Retry-After, child
    // processes), and one at a time made it the longest part of CI. No test judges timings, so a neighbour's load
    // cannot fail one.
    projects: lanes.map((lane) =>
      lane.test?.name === "fast"
        ? { ...lane, test: { ...lane.test, isolate: false } }
        : { ...lane, test: { ...lane.test, fileParallelism: true, maxWorkers: 2 } }
    ),
    // The compiled server, current, for the server processes the suites start; then one migrated database of each
    // backend for the run, copied for each in-process server and database layer.
    globalSetup: ["@petstore/test-support/serverBuild", "test/support/databaseTemplates.globalSetup.ts"],
    // Each suite starts real listeners and a database; PGlite alone takes seconds to open. The timeout is there
    // to catch a hang, not to judge the machine, which may be busy with other suites.
    testTimeout: 300_000,
    hookTimeout: 400_000,
    // The fast lane's files one at a time: they share one worker's modules.
    fileParallelism: false,
    // Suites that need PostgreSQL are tagged so; without DATABASE_URL they are skipped, and the reporter names them once.
    tags: [{
      name: "postgres",
      description: "needs PostgreSQL: set DATABASE_URL",
      skip: process.env.DATABASE_URL === undefined
    }],
    reporters: ["default", "./test/support/skippedPostgresReporter.ts"]
  }
})
