#!/usr/bin/env node
/**
 * `petstore-conformance`: the conformance suite from a terminal or a CI job.
 *
 *   CONFORMANCE_KEY_FREE=K1,K2 petstore-conformance --base-url https://staging.example.com/v1 --junit report.xml
 *   petstore-conformance --base-url https://staging.example.com/v1 --keys-file keys.txt
 *
 * Keys come from a file or the environment, so that no command line, process
 * list or log shows one; this program prints a key's last four characters at most.
 *
 * Exit codes: 0 nothing failed, 1 a check failed or the run was cut short (--max-duration, a service that gives no
 * answer), 2 bad usage, a refused key or an unreachable base URL, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Config, Console, Data, Effect, FileSystem, Option, Runtime } from "effect"
import { CliError, CliOutput, Command, Flag } from "effect/cli"
import { argumentValues, concatPlans, countKeys, type KeysByPlan, parseAssignment, parseKeysFile } from "./keys.ts"
import { type CheckResult, PLANS } from "./model.ts"
import { DEFAULT_FUZZ_REQUESTS } from "./fuzz.ts"
import { toHtml } from "./htmlReport.ts"
import { colourStyle, formatResult, formatSummary, plainStyle, toJson, toJUnit } from "./report.ts"
import { scrubber } from "./secrets.ts"
import {
  DEFAULT_CHECK_TIMEOUT_SECONDS,
  DEFAULT_MAX_DURATION_DAILY_SECONDS,
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  suite
} from "./suite.ts"
import { formatSeconds } from "./checks.ts"
import { parseListen } from "./webhookReceiver.ts"

/** A seed for the schema-driven phase: a non-negative 31-bit integer, short enough to retype. */
const randomSeed = () => Math.floor(Math.random() * 2 ** 31)

/** Ends the process with `exitCode` once its message (if any) is on stderr. */
class Exit extends Data.TaggedError("Exit")<{ readonly exitCode: number; readonly message: string }> {
  override get [Runtime.errorExitCode]() {
    return this.exitCode
  }
  // The message is printed where it arises; the runtime need not log it again.
  override readonly [Runtime.errorReported] = false
}

const usage = (message: string) =>
  Effect.andThen(Console.error(`petstore-conformance: ${message}`), Effect.fail(new Exit({ exitCode: 2, message })))

const PLAN_LIST = PLANS.join(", ")

/** The conventional exit codes of a process stopped by a signal (128 + its number). */
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const
type StopSignal = keyof typeof SIGNAL_EXIT_CODES

/**
 * While a run is in progress, the first SIGINT or SIGTERM stops it (its reports are still written); any other ends
 * the process at once, as a second Ctrl-C should.
 */
let stopRun: ((signal: StopSignal) => void) | undefined
let receivedSignal: StopSignal | undefined
for (const signal of Object.keys(SIGNAL_EXIT_CODES) as Array<StopSignal>) {
  process.on(signal, () => {
    const stop = stopRun
    stopRun = undefined
    if (stop === undefined) process.exit(SIGNAL_EXIT_CODES[signal])
    receivedSignal = signal
    stop(signal)
  })
}

/** Completes when a signal asks the run in progress to stop. */
const stopRequested = Effect.callback<string>((resume) => {
  stopRun = (signal) => resume(Effect.succeed(`interrupted by ${signal}`))
  return Effect.sync(() => {
    stopRun = undefined
  })
})

/** `90`, `90s`, `20m`, `20min`, `2h` (a plain number is seconds) as seconds, or undefined. */
const parseDuration = (text: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)\s*(s|m|min|h)?$/.exec(text.trim())
  if (match === null) return undefined
  const seconds = Number(match[1]) * (match[2] === "h" ? 3600 : match[2] === "m" || match[2] === "min" ? 60 : 1)
  return seconds > 0 ? seconds : undefined
}

const HOW_TO_GIVE_KEYS = "put PLAN=KEY lines in a file and pass --keys-file FILE (or set CONFORMANCE_KEYS_FILE), " +
  "or set CONFORMANCE_KEY_FREE, _PRO, _BUSINESS or _ENTERPRISE (several keys of a plan separated by commas)"

/** `--key free=K1` → free: [K1]; every key of a plan in the order given. */
const keysFromFlags = (assignments: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const keys: KeysByPlan = {}
    for (const [index, assignment] of assignments.entries()) {
      const parsed = parseAssignment(assignment)
      if ("problem" in parsed) {
        return yield* usage(
          `--key takes PLAN=KEY with PLAN one of ${PLAN_LIST}; --key number ${index + 1} ${parsed.problem}`
        )
      }
      ;(keys[parsed.plan] ??= []).push(parsed.key)
    }
    return keys
  })

const keysFromFile = (path: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(path)) return {}
    const fs = yield* FileSystem.FileSystem
    const contents = yield* fs.readFileString(path.value).pipe(
      Effect.catch((error) => usage(`cannot read the keys file ${path.value}: ${error.message}`))
    )
    const parsed = parseKeysFile(contents)
    if ("problem" in parsed) {
      return yield* usage(
        `${path.value} line ${parsed.line} ${parsed.problem}: each line is PLAN=KEY with PLAN one of ${PLAN_LIST} ` +
          "(blank lines and lines starting with # are ignored)"
      )
    }
    return parsed.keys
  })

/** CONFORMANCE_KEY_<PLAN>: one key, or several separated by commas; CONFORMANCE_KEY_STAFF: the staff key. */
const keysFromEnvironment = Effect.gen(function*() {
  const keys: KeysByPlan = {}
  for (const plan of [...PLANS, "staff"] as const) {
    const value = yield* Config.option(Config.String(`CONFORMANCE_KEY_${plan.toUpperCase()}`))
    if (Option.isNone(value)) continue
    const given = value.value.split(",").map((key) => key.trim()).filter((key) => key !== "")
    if (given.length > 0) keys[plan] = given
  }
  return keys
}).pipe(
  Effect.catchTag("ConfigError", (error) => usage(`cannot read the CONFORMANCE_KEY_* variables: ${error.message}`))
)

const HOW_TO_GIVE_ADMIN_TOKEN =
  "set CONFORMANCE_ADMIN_TOKEN, or put the token in a file and pass --admin-token-file FILE"

/**
 * `--admin-url` with the admin token from CONFORMANCE_ADMIN_TOKEN or `--admin-token-file` (never the command line,
 * which a process list shows). `--admin-url` without a token, or a token file without it, is bad usage; the variable
 * alone is ignored, since a CI job may set it for other steps.
 */
const adminAccess = (adminUrl: Option.Option<string>, tokenFile: Option.Option<string>) =>
  Effect.gen(function*() {
    const fromFile = Option.isNone(tokenFile) ? undefined : yield* FileSystem.FileSystem.pipe(
      Effect.flatMap((fs) => fs.readFileString(tokenFile.value)),
      Effect.map((contents) => contents.trim()),
      Effect.catch((error) => usage(`cannot read the admin token file ${tokenFile.value}: ${error.message}`))
    )
    if (fromFile === "") return yield* usage(`the admin token file ${Option.getOrThrow(tokenFile)} is empty`)
    const fromEnvironment = Option.getOrUndefined(
      yield* Config.option(Config.String("CONFORMANCE_ADMIN_TOKEN")).pipe(
        Effect.catchTag("ConfigError", () => Effect.succeed(Option.none()))
      )
    )?.trim()
    const token = fromFile ?? (fromEnvironment === "" ? undefined : fromEnvironment)
    if (Option.isNone(adminUrl)) {
      if (fromFile !== undefined) {
        return yield* usage("--admin-token-file needs --admin-url, the admin listener's address")
      }
      return undefined
    }
    if (token === undefined) return yield* usage(`--admin-url needs the admin token: ${HOW_TO_GIVE_ADMIN_TOKEN}`)
    return { url: adminUrl.value, token }
  })

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
    keysFile: Flag.String("keys-file").pipe(
      Flag.withFallbackConfig(Config.String("CONFORMANCE_KEYS_FILE")),
      Flag.optional,
      Flag.withDescription(
        "A file of API keys, one PLAN=KEY a line (or CONFORMANCE_KEYS_FILE; or the keys in CONFORMANCE_KEY_FREE, _PRO, " +
          "_BUSINESS, _ENTERPRISE). A plan's first key runs the general checks; further keys exhaust its windows in parallel. " +
          "staff=KEY (or CONFORMANCE_KEY_STAFF) gives a key with the staff role, for the store checks only staff may run"
      )
    ),
    keys: Flag.String("key").pipe(
      Flag.atLeast(0),
      Flag.withDescription(
        "PLAN=KEY, repeatable. Shows the key to anyone who sees the command line: prefer --keys-file"
      )
    ),
    only: Flag.Literals("only", ["spec"]).pipe(
      Flag.optional,
      Flag.withDescription("spec: only the checks the interface spec mandates, not this implementation's extensions")
    ),
    grep: Flag.String("grep").pipe(
      Flag.optional,
      Flag.withDescription("Only the checks whose id or title contains TEXT")
    ),
    junit: Flag.String("junit").pipe(Flag.optional, Flag.withDescription("Write a JUnit XML report to FILE")),
    json: Flag.String("json").pipe(Flag.optional, Flag.withDescription("Write a JSON report to FILE")),
    daily: Flag.Boolean("daily").pipe(
      Flag.withDefault(false),
      Flag.withDescription("Also spend each plan's daily quota, pacing under the minute quota: a long run")
    ),
    fuzz: Flag.Int("fuzz").pipe(
      Flag.withDefault(DEFAULT_FUZZ_REQUESTS),
      Flag.withDescription(
        `Requests the schema-driven phase generates from the contract's Schemas (default ${DEFAULT_FUZZ_REQUESTS}; 0 turns it off)`
      )
    ),
    seed: Flag.Int("seed").pipe(
      Flag.optional,
      Flag.withDescription(
        "The schema-driven phase's seed: the same seed sends the same requests again (default: a random one, printed)"
      )
    ),
    openapi: Flag.String("openapi").pipe(
      Flag.optional,
      Flag.withDescription(
        "The deployment's OpenAPI document, which every response is checked against (default BASE-URL/openapi.json when it exists)"
      )
    ),
    html: Flag.String("html").pipe(Flag.optional, Flag.withDescription("Write a self-contained HTML report to FILE")),
    webhooks: Flag.Boolean("webhooks").pipe(
      Flag.withDefault(false),
      Flag.withDescription(
        "Also check webhook deliveries: a receiver of the run is registered, events are caused, and what arrives is checked"
      )
    ),
    webhookListen: Flag.String("webhook-listen").pipe(
      Flag.optional,
      Flag.withDescription(
        "Where the webhook receiver listens, HOST:PORT (default 127.0.0.1:0, a free port); implies --webhooks"
      )
    ),
    corsOrigin: Flag.String("cors-origin").pipe(
      Flag.optional,
      Flag.withDescription(
        "An origin the deployment allows for CORS (CORS_ALLOWED_ORIGINS), e.g. https://app.example.com: checks CORS from it"
      )
    ),
    adminUrl: Flag.String("admin-url").pipe(
      Flag.withFallbackConfig(Config.String("CONFORMANCE_ADMIN_URL")),
      Flag.optional,
      Flag.withDescription(
        "The admin listener's address, e.g. http://127.0.0.1:8081 (or CONFORMANCE_ADMIN_URL), with the admin token in " +
          "CONFORMANCE_ADMIN_TOKEN or --admin-token-file: checks key expiry and rolling with keys the run makes and revokes"
      )
    ),
    adminTokenFile: Flag.String("admin-token-file").pipe(
      Flag.optional,
      Flag.withDescription(
        "A file holding the admin token, for --admin-url (or set CONFORMANCE_ADMIN_TOKEN); never give the token itself on the command line"
      )
    ),
    webhookPublicUrl: Flag.String("webhook-public-url").pipe(
      Flag.optional,
      Flag.withDescription(
        "The http(s) URL at which the deployment reaches the receiver, when not its listening address; implies --webhooks"
      )
    ),
    maxDuration: Flag.String("max-duration").pipe(
      Flag.optional,
      Flag.withDescription(
        `The longest the whole run may take, e.g. 90s, 20m, 2h (default ${
          formatSeconds(DEFAULT_MAX_DURATION_SECONDS)
        }, room for every plan's minute window even with a single free key; ${
          formatSeconds(DEFAULT_MAX_DURATION_DAILY_SECONDS)
        } with --daily, room for business's day). Then the run stops: the checks still running fail, the others are ` +
          "reported as not run, the reports are written and marked incomplete, and the exit code is 1"
      )
    ),
    checkTimeout: Flag.String("check-timeout").pipe(
      Flag.optional,
      Flag.withDescription(
        `The longest one check may take, e.g. 60s (default ${
          formatSeconds(DEFAULT_CHECK_TIMEOUT_SECONDS)
        }; a --daily check gets its quota's pacing on top). A check that takes longer fails, saying so`
      )
    ),
    requestTimeout: Flag.String("request-timeout").pipe(
      Flag.optional,
      Flag.withDescription(
        `The longest one request may wait for its whole answer, e.g. 10s (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS} s)`
      )
    )
  },
  Effect.fn(function*(input) {
    const fromCommandLine = concatPlans(yield* keysFromFile(input.keysFile), yield* keysFromFlags(input.keys))
    // A plan's keys on the command line replace that plan's variable.
    const keys = { ...(yield* keysFromEnvironment), ...fromCommandLine }
    if (countKeys(keys) === 0) {
      return yield* usage(`no API key given. Every run needs at least one: ${HOW_TO_GIVE_KEYS}`)
    }
    const { staff: staffKeys = [], ...planKeys } = keys
    if (staffKeys.length > 1) {
      return yield* usage(`${staffKeys.length} staff keys given: give one (a staff=KEY line, or CONFORMANCE_KEY_STAFF)`)
    }
    const style = process.stdout.isTTY && process.env.NO_COLOR === undefined ? colourStyle : plainStyle
    const progress = makeProgress()
    const printResult = (result: CheckResult) => {
      progress.clear()
      process.stdout.write(`${formatResult(result, style)}\n`)
    }

    const listen = Option.getOrUndefined(input.webhookListen)
    const publicUrl = Option.getOrUndefined(input.webhookPublicUrl)
    if (listen !== undefined && parseListen(listen) === undefined) {
      return yield* usage(`--webhook-listen takes HOST:PORT, such as 0.0.0.0:8099 or [::1]:8099, not "${listen}"`)
    }
    if (publicUrl !== undefined && (!URL.canParse(publicUrl) || !/^https?:$/.test(new URL(publicUrl).protocol))) {
      return yield* usage(
        `--webhook-public-url must be an http(s) URL such as https://hooks.example.com, not "${publicUrl}"`
      )
    }
    const webhooks = input.webhooks || listen !== undefined || publicUrl !== undefined
    const admin = yield* adminAccess(input.adminUrl, input.adminTokenFile)

    if (input.fuzz < 0) return yield* usage(`--fuzz takes a number of requests, 0 or more, not ${input.fuzz}`)
    const durations: Record<"maxDuration" | "checkTimeout" | "requestTimeout", number | undefined> = {
      maxDuration: undefined,
      checkTimeout: undefined,
      requestTimeout: undefined
    }
    for (
      const [name, flag] of [
        ["maxDuration", "--max-duration"],
        ["checkTimeout", "--check-timeout"],
        ["requestTimeout", "--request-timeout"]
      ] as const
    ) {
      const given = Option.getOrUndefined(input[name])
      if (given === undefined) continue
      const seconds = parseDuration(given)
      if (seconds === undefined) {
        return yield* usage(
          `${flag} takes a duration such as 90s, 20m or 2h (a plain number is seconds), not "${given}"`
        )
      }
      durations[name] = seconds
    }
    const seed = Option.getOrElse(input.seed, randomSeed)
    if (input.fuzz > 0) {
      yield* Console.error(`fuzz: seed ${seed} (replay this run's generated requests with --seed ${seed})`)
    }
    const result = yield* suite({
      baseUrl: input.baseUrl,
      keys: planKeys,
      staffKey: staffKeys[0],
      ...Option.match(input.only, { onNone: () => ({}), onSome: (only) => ({ only }) }),
      ...Option.match(input.grep, { onNone: () => ({}), onSome: (grep) => ({ grep }) }),
      daily: input.daily,
      fuzz: input.fuzz,
      seed,
      ...Option.match(input.openapi, { onNone: () => ({}), onSome: (openapi) => ({ openapi }) }),
      ...(webhooks ? { webhooks: { listen, publicUrl } } : {}),
      ...Option.match(input.corsOrigin, { onNone: () => ({}), onSome: (corsOrigin) => ({ corsOrigin }) }),
      ...(admin === undefined ? {} : { admin }),
      onResult: printResult,
      onProgress: progress.show,
      ...(durations.maxDuration === undefined ? {} : { maxDurationSeconds: durations.maxDuration }),
      ...(durations.checkTimeout === undefined ? {} : { checkTimeoutSeconds: durations.checkTimeout }),
      ...(durations.requestTimeout === undefined ? {} : { requestTimeoutSeconds: durations.requestTimeout }),
      stop: stopRequested
    }).pipe(
      Effect.catchTags({
        InvalidOptions: (error) => usage(error.message),
        InvalidKeys: (error) => usage(error.message),
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
    yield* write(input.html, toHtml(result), "HTML")

    yield* Console.log(formatSummary(result.summary, result.incomplete))
    if (receivedSignal !== undefined) {
      return yield* new Exit({
        exitCode: SIGNAL_EXIT_CODES[receivedSignal],
        message: `interrupted by ${receivedSignal}`
      })
    }
    if (result.summary.failed > 0 || result.incomplete !== undefined) {
      return yield* new Exit({ exitCode: 1, message: `${result.summary.failed} checks failed` })
    }
  })
).pipe(
  Command.withDescription(
    "Checks a deployment of the Animal Adoption Store Service against its interface spec and documented behaviour, " +
      "over HTTP only. Every check is bounded (--check-timeout, and in requests), and so is the run (--max-duration). " +
      "SIGINT or SIGTERM stops a run: the reports asked for are written with what was checked, marked incomplete. " +
      "Exit codes: 0 nothing failed; 1 a check failed, or the run ended incomplete (--max-duration, a service that " +
      "gives no HTTP answer); 2 bad usage, a refused key or an unreachable base URL; 130 stopped by SIGINT; " +
      "143 stopped by SIGTERM."
  ),
  Command.withExamples([
    {
      command: "petstore-conformance --base-url https://staging.example.com/v1 --keys-file keys.txt",
      description:
        "Every check, with the keys of keys.txt (lines such as free=psk_…; two per plan make the quickest run)"
    },
    {
      command: "CONFORMANCE_KEY_BUSINESS=\"$KEY\" petstore-conformance --base-url http://localhost:8080/v1 --only spec",
      description: "Only what the spec mandates, with a business key from the environment"
    }
  ])
)

/**
 * A command line that cannot be parsed is answered with its errors alone, which
 * quote the offending values: a key given in the wrong place shows only its last
 * four characters there too.
 */
const scrubArguments = scrubber(argumentValues(process.argv.slice(2)))
const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.gen(function*() {
        const formatter = yield* CliOutput.Formatter
        yield* Console.error(scrubArguments(formatter.formatErrors(event.errors)))
        yield* Console.error("petstore-conformance --help shows every option")
      })
      : CliOutput.defaultPresenter.present(event)
}

Command.run(conformance, { version: "1.0.0" }).pipe(
  // Argument errors are bad usage: exit 2, not the runner's 1.
  Effect.catchIf(
    CliError.isCliError,
    (error): Effect.Effect<never, CliError.CliError | Exit> =>
      error._tag === "ShowHelp" && error.errors.length === 0
        ? Effect.fail(error)
        : Effect.fail(new Exit({ exitCode: 2, message: error.message }))
  ),
  Effect.provide(CliOutput.layerPresenter(presenter)),
  Effect.provide(NodeServices.layer),
  // NodeRuntime.runMain, without its own SIGINT and SIGTERM handlers: those interrupt the program at once, and
  // this one's stop the run so that it still writes its reports.
  Runtime.makeRunMain(({ fiber, teardown }) => {
    fiber.addObserver((exit) =>
      teardown(exit, (code) => {
        if (code !== 0) process.exit(code)
      })
    )
  })
)
