#!/usr/bin/env node
/**
 * `petstore-conformance`: the conformance suite from a terminal or a CI job.
 *
 *   petstore-conformance --base-url https://staging.example.com/v1 --key free=K1 --key free=K2 --junit report.xml
 *
 * Exit codes: 0 nothing failed, 1 a check failed, 2 bad usage or an unreachable base URL.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Config, Console, Data, Effect, FileSystem, Option, Runtime } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { type CheckResult, type Plan, PLANS } from "./model.ts"
import { colourStyle, formatResult, formatSummary, plainStyle, toJson, toJUnit } from "./report.ts"
import { suite } from "./suite.ts"

/** Ends the process with `exitCode` once its message (if any) is on stderr. */
class Exit extends Data.TaggedError("Exit")<{ readonly exitCode: 1 | 2; readonly message: string }> {
  override get [Runtime.errorExitCode]() {
    return this.exitCode
  }
  // The message is printed where it arises; the runtime need not log it again.
  override readonly [Runtime.errorReported] = false
}

const usage = (message: string) =>
  Effect.andThen(Console.error(`petstore-conformance: ${message}`), Effect.fail(new Exit({ exitCode: 2, message })))

const isPlan = (value: string): value is Plan => (PLANS as ReadonlyArray<string>).includes(value)

/** `free=K1` → free: [K1]; every key of a plan in the order given. */
const parseKeyFlags = (assignments: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const keys: Partial<Record<Plan, Array<string>>> = {}
    for (const assignment of assignments) {
      const separator = assignment.indexOf("=")
      const plan = assignment.slice(0, separator).trim().toLowerCase()
      const key = assignment.slice(separator + 1).trim()
      if (separator < 0 || !isPlan(plan) || key === "") {
        return yield* usage(`--key takes PLAN=KEY with PLAN one of ${PLANS.join(", ")}, not "${assignment}"`)
      }
      ;(keys[plan] ??= []).push(key)
    }
    return keys
  })

/** CONFORMANCE_KEY_<PLAN>, for plans the command line gave no key: one key, or several separated by commas. */
const keysFromEnvironment = Effect.gen(function*() {
  const keys: Partial<Record<Plan, Array<string>>> = {}
  for (const plan of PLANS) {
    const value = yield* Config.option(Config.String(`CONFORMANCE_KEY_${plan.toUpperCase()}`))
    if (Option.isNone(value)) continue
    const given = value.value.split(",").map((key) => key.trim()).filter((key) => key !== "")
    if (given.length > 0) keys[plan] = given
  }
  return keys
}).pipe(Effect.catchTag("ConfigError", (error) => usage(`cannot read the CONFORMANCE_KEY_* variables: ${error.message}`)))

/** On a terminal the line is rewritten in place; in a CI log, every wait, and otherwise a line per phase every few seconds. */
const makeProgress = () => {
  if (process.stderr.isTTY) {
    let shown = false
    return {
      show: (line: string) => {
        process.stderr.write(`\r\u001b[2K${line.slice(0, (process.stderr.columns || 100) - 1)}`)
        shown = true
      },
      clear: () => {
        if (shown) process.stderr.write("\r\u001b[2K")
        shown = false
      }
    }
  }
  const lastByPhase = new Map<string, number>()
  return {
    show: (line: string) => {
      const phase = line.split(":")[0]!
      const announcesAWait = /waiting|next window/.test(line)
      if (!announcesAWait && Date.now() - (lastByPhase.get(phase) ?? 0) < 5_000) return
      lastByPhase.set(phase, Date.now())
      process.stderr.write(`… ${line}\n`)
    },
    clear: () => {}
  }
}

const conformance = Command.make(
  "petstore-conformance",
  {
    baseUrl: Flag.String("base-url").pipe(
      Flag.withFallbackConfig(Config.String("CONFORMANCE_BASE_URL")),
      Flag.withDescription("The service's base URL, including /v1 (or CONFORMANCE_BASE_URL)")
    ),
    keys: Flag.String("key").pipe(
      Flag.atLeast(0),
      Flag.withDescription(
        "PLAN=KEY, repeatable (or CONFORMANCE_KEY_FREE, _PRO, _BUSINESS, _ENTERPRISE). " +
          "A plan's first key runs the general checks; further keys exhaust its windows in parallel"
      )
    ),
    only: Flag.Literals("only", ["spec"]).pipe(
      Flag.optional,
      Flag.withDescription("spec: only the checks the interface spec mandates, not this implementation's extensions")
    ),
    grep: Flag.String("grep").pipe(Flag.optional, Flag.withDescription("Only the checks whose id or title contains TEXT")),
    junit: Flag.String("junit").pipe(Flag.optional, Flag.withDescription("Write a JUnit XML report to FILE")),
    json: Flag.String("json").pipe(Flag.optional, Flag.withDescription("Write a JSON report to FILE")),
    daily: Flag.Boolean("daily").pipe(
      Flag.withDefault(false),
      Flag.withDescription("Also spend each plan's daily quota, pacing under the minute quota: a long run")
    )
  },
  Effect.fn(function*(input) {
    const fromFlags = yield* parseKeyFlags(input.keys)
    const fromEnvironment = yield* keysFromEnvironment
    const keys = { ...fromEnvironment, ...fromFlags }
    const style = process.stdout.isTTY && process.env.NO_COLOR === undefined ? colourStyle : plainStyle
    const progress = makeProgress()
    const printResult = (result: CheckResult) => {
      progress.clear()
      process.stdout.write(`${formatResult(result, style)}\n`)
    }

    const result = yield* suite({
      baseUrl: input.baseUrl,
      keys,
      ...Option.match(input.only, { onNone: () => ({}), onSome: (only) => ({ only }) }),
      ...Option.match(input.grep, { onNone: () => ({}), onSome: (grep) => ({ grep }) }),
      daily: input.daily,
      onResult: printResult,
      onProgress: progress.show
    }).pipe(
      Effect.catchTags({
        InvalidOptions: (error) => usage(error.message),
        Unreachable: (error) => usage(`${error.message}; is the base URL right, and is the service up?`)
      })
    )
    progress.clear()

    const fs = yield* FileSystem.FileSystem
    const write = (path: Option.Option<string>, contents: string, what: string) =>
      Option.match(path, {
        onNone: () => Effect.void,
        onSome: (path) =>
          fs.writeFileString(path, contents).pipe(
            Effect.andThen(Console.error(`${what} report written to ${path}`)),
            Effect.catch((error) => usage(`cannot write the ${what} report to ${path}: ${error.message}`))
          )
      })
    yield* write(input.junit, toJUnit(result), "JUnit")
    yield* write(input.json, toJson(result), "JSON")

    yield* Console.log(formatSummary(result.summary))
    if (result.summary.failed > 0) {
      return yield* new Exit({ exitCode: 1, message: `${result.summary.failed} checks failed` })
    }
  })
).pipe(
  Command.withDescription(
    "Checks a deployment of the Animal Adoption Store Service against its interface spec and documented behaviour, " +
      "over HTTP only. Exit codes: 0 nothing failed, 1 a check failed, 2 bad usage or an unreachable base URL."
  ),
  Command.withExamples([
    {
      command: "petstore-conformance --base-url https://staging.example.com/v1 --key free=K1 --key free=K2 --key pro=K3",
      description: "Every check, with two free keys (one set aside to exhaust a window) and a pro key"
    },
    { command: "petstore-conformance --base-url http://localhost:8080/v1 --key business=K --only spec", description: "Only what the spec mandates" }
  ])
)

Command.run(conformance, { version: "1.0.0" }).pipe(
  // Argument errors are bad usage: exit 2, not the runner's 1.
  Effect.catchIf(CliError.isCliError, (error): Effect.Effect<never, CliError.CliError | Exit> =>
    error._tag === "ShowHelp" && error.errors.length === 0
      ? Effect.fail(error)
      : Effect.fail(new Exit({ exitCode: 2, message: error.message }))),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
