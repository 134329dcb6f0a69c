import { Data } from "effect"

/**
 * The environment does not let the server start as configured: a database it
 * cannot open, a port it cannot listen on, a directory it cannot use. The
 * message names the variable and the cause, on one line.
 */
export class StartupError extends Data.TaggedError("StartupError")<{ readonly message: string }> {}
