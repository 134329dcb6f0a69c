import { defineConfig } from "vitest/config"
import { lanes } from "@petstore/test-support/lanes"

export default defineConfig({
  test: {
    projects: lanes,
    // The compiled server, current, for the server processes the suites start.
    globalSetup: ["@petstore/test-support/serverBuild"],
    // The real-server suites wait out a minute window's Retry-After once; everything else takes seconds on an
    // idle machine. The timeout is there to catch a hang, not to judge the machine: on two cores at load 20, eight
    // deviation runs side by side took over three minutes each.
    testTimeout: 600_000,
    hookTimeout: 400_000,
    // Mostly waiting on sockets and Retry-After, but each file first boots a server with an embedded
    // database, seconds of CPU each: three at a time keeps those boots from starving one another.
    maxWorkers: 3,
    // Each deviation runs the whole suite against a fixture of its own, both in this worker's one event loop.
    // All 35 of a file at once queued so much work in that loop that, on a busy machine, a request waited
    // behind the others past the fixture's 5 s keep-alive timeout (the reused connection was reset) and then
    // past the suite's 30 s request timeout. Eight at a time keep each request's wait short however busy the
    // machine is; the runs take longer in all, not each.
    maxConcurrency: 8
  }
})
