/**
 * `pnpm keys`: provisions API keys through the server's admin API. It talks to
 * the server only over HTTP, with the contract's typed admin client, so it is a
 * package of its own and depends on the contract, not on the server.
 *
 *   ADMIN_TOKEN=... pnpm keys create --plan pro --name ci-bot
 *   ADMIN_TOKEN=... pnpm keys list
 *
 * ADMIN_URL (default http://127.0.0.1:8081) is the admin listener's address.
 * Exit codes: 0 done, 1 the server refused or could not be reached, 2 bad usage or configuration.
 *
 * `pnpm build` bundles it into one file (dist/main.js, with rolldown): compiled module by module, loading
 * Effect's and the contract's hundreds of files took most of a call's time (README, "Admin API").
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import {
  type AdminClient,
  ApiKeyId,
  ApiKeyName,
  type ApiKeyView,
  type CreatedKey,
  AuditAction,
  type AuditEntry,
  KeyRole,
  type KeyUsage,
  makeAdminClient,
  nextCursor,
  Plan,
  QuotaLimits
} from "@petstore/contract"
import { Config, Console, Context, Data, Effect, Layer, Option, Predicate, Runtime, Schema } from "effect"
import { Argument, CliError, CliOutput, Command, Flag } from "effect/cli"
import { HttpClientError } from "effect/http"

/** A failure the user reads as one line on stderr; the CLI runner prints it and the runtime exits with `exitCode`. */
class KeysError extends Data.TaggedError("KeysError")<{ readonly message: string; readonly exitCode: 1 | 2 }> {
  override get [CliError.userMessage]() {
    return this.message
  }
  override get [Runtime.errorExitCode]() {
    return this.exitCode
  }
}

const toKeysError = (adminUrl: string) => (error: unknown): KeysError => {
  if (HttpClientError.isHttpClientError(error)) {
    const message = error.reason._tag === "TransportError"
      ? `cannot reach the admin API at ${adminUrl}; is the server running, and is ADMIN_URL its admin address?`
      // The admin API declares its 404 (an unknown key): an undeclared one is another server, or the public port.
      : error.response?.status === 404
      ? `no admin API at ${adminUrl}: is ADMIN_URL the server's admin address (ADMIN_HOST:ADMIN_PORT), not its public one?`
      : `unexpected answer from the admin API at ${adminUrl}: ${error.message}`
    return new KeysError({ message, exitCode: 1 })
  }
  // The contract's errors all carry the server's `{ code, message }`.
  if (Predicate.hasProperty(error, "code") && Predicate.hasProperty(error, "message")) {
    return new KeysError({ message: `${String(error.code)}: ${inCliTerms(error, adminUrl)}`, exitCode: 1 })
  }
  return new KeysError({
    message: `unexpected answer from the admin API at ${adminUrl}: ${String(error)}`,
    exitCode: 1
  })
}

/** The CLI's words for the admin API's fields, so that a refusal names what the user typed. */
const flagOfField: Readonly<Record<string, string>> = {
  "body.plan": "--plan",
  "body.limits": "--per-minute and --per-day",
  "body.limits.perMinute": "--per-minute",
  "body.limits.perDay": "--per-day",
  "body.name": "--name",
  "body.role": "--role",
  "params.id": "<id>"
}

/**
 * A refusal as the CLI's user reads it: the admin API's messages name its JSON
 * fields (`limits`) and its HTTP header, which this user never typed.
 */
const inCliTerms = (error: { readonly code: unknown; readonly message: unknown }, adminUrl: string) => {
  if (error.code === "unauthorized") return `ADMIN_TOKEN is not the admin token of the server at ${adminUrl}`
  const details = Predicate.hasProperty(error, "details") && Array.isArray(error.details)
    ? (error.details as ReadonlyArray<{ readonly path: string; readonly message: string }>)
    : []
  const named = details.filter((detail) => flagOfField[detail.path] !== undefined)
  return named.length > 0 && named.length === details.length
    ? named.map((detail) => `${flagOfField[detail.path]}: ${detail.message}`).join("; ")
    : String(error.message)
}

/** The admin API, with every failure already turned into a `KeysError`. */
class Admin extends Context.Service<Admin, {
  readonly call: <A, E>(request: (client: AdminClient) => Effect.Effect<A, E>) => Effect.Effect<A, KeysError>
}>()("@petstore/keys/Admin") {
  // Provided to each subcommand rather than to `keys`, so that it is built only when one runs: help needs no ADMIN_TOKEN.
  static readonly layer = Layer.effect(
    Admin,
    Effect.gen(function*() {
      const { adminUrl, adminToken } = yield* Config.all({
        adminUrl: Config.URL("ADMIN_URL").pipe(Config.withDefault(new URL("http://127.0.0.1:8081"))),
        adminToken: Config.option(Config.String("ADMIN_TOKEN"))
      }).pipe(
        // ADMIN_URL is the one variable whose value can be wrong (any ADMIN_TOKEN is sent as it is, for the server to judge).
        Effect.mapError(() =>
          new KeysError({ message: "invalid configuration: ADMIN_URL: Expected a valid URL string", exitCode: 2 })
        )
      )
      if (Option.isNone(adminToken) || adminToken.value === "") {
        return yield* new KeysError({
          message: "ADMIN_TOKEN is not set: export the server's admin token to use the admin API",
          exitCode: 2
        })
      }
      const baseUrl = adminUrl.href.replace(/\/+$/, "")
      const client = yield* makeAdminClient({ baseUrl, adminToken: adminToken.value })
      return Admin.of({ call: (request) => Effect.mapError(request(client), toKeysError(baseUrl)) })
    })
    // node:http rather than fetch: fetch's undici took a tenth of a call's CPU time to load.
  ).pipe(Layer.provide(NodeHttpClient.layerNodeHttp))
}

const formatLimits = ({ perMinute, perDay }: QuotaLimits) => `${perMinute}/min ${perDay}/day`

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/** The shape of most commands: one admin call, its answer shown as JSON with --json, else in the words of `say`. */
const showAnswer = <A, E>(request: (client: AdminClient) => Effect.Effect<A, E>, say: (answer: A) => string) =>
  Effect.gen(function*() {
    const { json } = yield* keys
    const answer = yield* (yield* Admin).call(request)
    yield* json ? printJson(answer) : Console.log(say(answer))
  })

// Under exactOptionalPropertyTypes an absent field must be left out, not set to undefined.
const fieldIfSome = <const K extends string, A>(key: K, value: Option.Option<A>) =>
  Option.match(value, { onNone: () => ({}), onSome: (value) => ({ [key]: value }) }) as { readonly [P in K]?: A }

const keys = Command.make("keys").pipe(
  Command.withSharedFlags({
    json: Flag.Boolean("json").pipe(Flag.withDescription("Print the admin API's JSON answer"), Flag.withDefault(false))
  }),
  Command.withDescription("Provision API keys through the server's admin API (ADMIN_URL, ADMIN_TOKEN)")
)

const plan = Flag.Literals("plan", Plan.literals).pipe(
  Flag.withDescription("free, pro and business have fixed limits; enterprise needs --per-minute and --per-day")
)

const role = Flag.Literals("role", KeyRole.literals).pipe(
  Flag.withDescription(
    "customer (the default) orders for itself; staff reads, cancels and delivers any order, and deletes pets"
  )
)

// The contract's own schemas check input before anything is sent: the client would refuse it anyway, with a less helpful message.
const limitFlags = {
  perMinute: Flag.Int("per-minute").pipe(
    Flag.withSchema(QuotaLimits.fields.perMinute),
    Flag.withDescription("Requests per minute (enterprise only)"),
    Flag.optional
  ),
  perDay: Flag.Int("per-day").pipe(
    Flag.withSchema(QuotaLimits.fields.perDay),
    Flag.withDescription("Requests per day (enterprise only)"),
    Flag.optional
  )
}

interface LimitInput {
  readonly perMinute: Option.Option<number>
  readonly perDay: Option.Option<number>
}

const limitsOf = (input: LimitInput) =>
  Option.zipWith(input.perMinute, input.perDay, (perMinute, perDay) => ({ perMinute, perDay }))

const usageError = (message: string) => Effect.fail(new CliError.ValidationError({ message }))

// Half a pair of limits is a typo, not something to send to the server; nor are limits for a plan whose are fixed.
const limitsFitThePlan = <Input extends LimitInput & { readonly plan: Plan }>(input: Input) =>
  Option.isSome(input.perMinute) !== Option.isSome(input.perDay)
    ? usageError("--per-minute and --per-day go together")
    : Option.isSome(input.perMinute) && input.plan !== "enterprise"
    ? usageError(`--per-minute and --per-day are for enterprise keys only: the ${input.plan} plan's limits are fixed`)
    : Effect.void

/** A duration as people type it: a whole number and s, m, h or d. */
const DurationText = Schema.String.check(
  Schema.isPattern(/^[0-9]{1,9}[smhd]$/, { expected: "a duration such as 30d, 12h, 90m or 3600s" })
)
const seconds = (text: string) => Number(text.slice(0, -1)) * { s: 1, m: 60, h: 3_600, d: 86_400 }[text.at(-1)!]!
const fromNow = (seconds: number) => new Date(Date.now() + seconds * 1_000).toISOString()

/** A new key as the operator reads it: its secret is shown this once. */
const createdLines = (created: CreatedKey) =>
  [
    `Created ${created.id}`,
    `  plan:   ${created.plan}`,
    `  limits: ${formatLimits(created.limits)}`,
    `  role:   ${created.role ?? "customer"}`,
    ...(created.name === "" ? [] : [`  name:   ${created.name}`]),
    ...(created.expiresAt === undefined ? [] : [`  expires: ${created.expiresAt}`]),
    `  key:    ${created.key}`,
    "",
    "The key is shown only this once and cannot be retrieved later: store it now."
  ].join("\n")

const create = Command.make(
  "create",
  {
    plan,
    name: Flag.String("name").pipe(
      Flag.withSchema(ApiKeyName),
      Flag.withDescription("A label for the key"),
      Flag.optional
    ),
    role: role.pipe(Flag.optional),
    expiresIn: Flag.String("expires-in").pipe(
      Flag.withSchema(DurationText),
      Flag.withDescription("The key expires this long from now: 30d, 12h, 90m or 3600s (at most 366d)"),
      Flag.optional
    ),
    ...limitFlags
  },
  (input) =>
    showAnswer((client) =>
      client.keys.createKey({
        payload: {
          plan: input.plan,
          ...fieldIfSome("name", input.name),
          ...fieldIfSome("limits", limitsOf(input)),
          ...fieldIfSome("role", input.role),
          ...fieldIfSome("expiresAt", Option.map(input.expiresIn, (text) => fromNow(seconds(text))))
        }
      }), createdLines)
).pipe(
  Command.validate((input) =>
    input.plan === "enterprise" && Option.isNone(input.perMinute) && Option.isNone(input.perDay)
      ? usageError("an enterprise key needs --per-minute and --per-day")
      : limitsFitThePlan(input)
  ),
  Command.provide(Admin.layer),
  Command.withDescription("Create an API key and print its secret (shown once)"),
  Command.withExamples([
    { command: "keys create --plan pro --name ci-bot", description: "A pro key" },
    { command: "keys create --plan enterprise --per-minute 5000 --per-day 1000000", description: "An enterprise key" },
    { command: "keys create --plan business --role staff --name front-desk", description: "A staff key" },
    { command: "keys create --plan free --name trial --expires-in 30d", description: "A key that expires in 30 days" }
  ])
)

/** Columns as wide as their widest cell, two spaces apart. */
const table = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n")
}

/** A time to the minute, as `lastUsedAt` is exact to a minute. */
const toMinute = (iso: string | undefined) => iso === undefined ? "-" : iso.slice(0, 16) + "Z"

const keyRow = (key: ApiKeyView) => [
  key.id,
  key.plan,
  formatLimits(key.limits),
  key.role ?? "customer",
  key.name || "-",
  key.createdAt,
  toMinute(key.expiresAt),
  toMinute(key.lastUsedAt)
]

const list = Command.make(
  "list",
  {
    expired: Flag.Boolean("expired").pipe(
      Flag.withDescription("List the expired keys instead (kept 30 days after they expire)"),
      Flag.withDefault(false)
    )
  },
  Effect.fn(function*({ expired }) {
    const { json } = yield* keys
    const admin = yield* Admin
    const all = yield* admin.call((client) => client.keys.listKeys({ query: { state: expired ? "expired" : "live" } }))
    if (json) return yield* printJson(all)
    if (all.length === 0) return yield* Console.log(expired ? "No expired API keys." : "No live API keys.")
    yield* Console.log(
      table([["ID", "PLAN", "LIMITS", "ROLE", "NAME", "CREATED", "EXPIRES", "LAST USED"], ...all.map(keyRow)])
    )
  })
).pipe(
  Command.provide(Admin.layer),
  Command.withDescription(
    "List the live API keys: id, plan, limits, role, name, creation, expiry and last use (never a secret)"
  )
)

const id = Argument.String("id").pipe(
  Argument.withSchema(ApiKeyId),
  Argument.withDescription("The key's id, e.g. key_0123456789abcdef")
)

const revoke = Command.make(
  "revoke",
  { id },
  Effect.fn(function*({ id }) {
    const { json } = yield* keys
    const admin = yield* Admin
    yield* admin.call((client) => client.keys.revokeKey({ params: { id } }))
    yield* json ? printJson({ id, revoked: true }) : Console.log(`Revoked ${id}: it is refused from now on.`)
  })
).pipe(Command.provide(Admin.layer), Command.withDescription("Revoke an API key for good"))

const setPlan = Command.make(
  "set-plan",
  { id, plan, ...limitFlags },
  (input) =>
    showAnswer(
      (client) =>
        client.keys.updateKey({
          params: { id: input.id },
          payload: { plan: input.plan, ...fieldIfSome("limits", limitsOf(input)) }
        }),
      (updated) => `Updated ${updated.id}: plan ${updated.plan}, limits ${formatLimits(updated.limits)}`
    )
).pipe(
  // Whether --plan enterprise needs limits depends on the key's plan now (an enterprise key keeps its own): the
  // server judges that, and its refusal names the flags (`inCliTerms`).
  Command.validate(limitsFitThePlan),
  Command.provide(Admin.layer),
  Command.withDescription("Change a key's plan, and an enterprise key's limits")
)

const setRole = Command.make(
  "set-role",
  { id, role },
  (input) =>
    showAnswer(
      (client) => client.keys.updateKey({ params: { id: input.id }, payload: { role: input.role } }),
      (updated) => `Updated ${updated.id}: role ${updated.role ?? "customer"}`
    )
).pipe(
  Command.provide(Admin.layer),
  Command.withDescription("Make a key a customer or staff; every server process sees it at once")
)

const setExpiry = Command.make(
  "set-expiry",
  {
    id,
    expiresIn: Flag.String("expires-in").pipe(
      Flag.withSchema(DurationText),
      Flag.withDescription("The key expires this long from now: 30d, 12h, 90m or 3600s (at most 366d)"),
      Flag.optional
    ),
    never: Flag.Boolean("never").pipe(Flag.withDescription("The key never expires"), Flag.withDefault(false))
  },
  (input) => {
    const expiresAt = Option.match(input.expiresIn, { onNone: () => null, onSome: (text) => fromNow(seconds(text)) })
    return showAnswer(
      (client) => client.keys.updateKey({ params: { id: input.id }, payload: { expiresAt } }),
      (updated) =>
        `Updated ${updated.id}: ${updated.expiresAt === undefined ? "never expires" : `expires ${updated.expiresAt}`}`
    )
  }
).pipe(
  Command.validate((input) =>
    Option.isSome(input.expiresIn) === input.never
      ? Effect.fail(new CliError.ValidationError({ message: "give one of --expires-in and --never" }))
      : Effect.void
  ),
  Command.provide(Admin.layer),
  Command.withDescription("Set when a key expires, or make it never expire; brings an expired key back")
)

/** A rolled key as the operator reads it: the new secret, shown this once, and how long the old one works. */
const rolledLines = (rolled: CreatedKey) =>
  [
    `Rolled ${rolled.id}`,
    `  key:    ${rolled.key}`,
    rolled.previousKeyExpiresAt === undefined
      ? "  The previous secret no longer works."
      : `  The previous secret works until ${rolled.previousKeyExpiresAt}.`,
    "",
    "The new key is shown only this once and cannot be retrieved later: store it now."
  ].join("\n")

const roll = Command.make(
  "roll",
  {
    id,
    overlap: Flag.String("overlap").pipe(
      Flag.withSchema(DurationText),
      Flag.withDescription("How long the current secret keeps working (default 24h, at most 7d; 0s cuts over now)"),
      Flag.optional
    )
  },
  (input) =>
    showAnswer((client) =>
      client.keys.rollKey({
        params: { id: input.id },
        payload: fieldIfSome("overlapSeconds", Option.map(input.overlap, seconds))
      }), rolledLines)
).pipe(
  Command.provide(Admin.layer),
  Command.withDescription("Give a key a new secret (shown once); the old one keeps working for the overlap"),
  Command.withExamples([{ command: "keys roll key_0123456789abcdef --overlap 1h", description: "A one-hour overlap" }])
)

const auditRow = (entry: AuditEntry) => [
  entry.occurredAt,
  entry.action,
  entry.keyId,
  entry.clientAddress,
  JSON.stringify(entry.changes)
]

const audit = Command.make(
  "audit",
  {
    key: Flag.String("key").pipe(Flag.withSchema(ApiKeyId), Flag.withDescription("Only this key's"), Flag.optional),
    action: Flag.Literals("action", AuditAction.literals).pipe(
      Flag.withDescription("Only this action's"),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(
      Flag.withSchema(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 }))),
      Flag.withDescription("Entries a page, 1-100 (default 20)"),
      Flag.optional
    ),
    cursor: Flag.String("cursor").pipe(Flag.withDescription("Continue where a previous page ended"), Flag.optional)
  },
  Effect.fn(function*(input) {
    const { json } = yield* keys
    const admin = yield* Admin
    const { body, headers } = yield* admin.call((client) =>
      client.audit.listAudit({
        query: {
          ...fieldIfSome("keyId", input.key),
          ...fieldIfSome("action", input.action),
          ...fieldIfSome("limit", input.limit),
          ...fieldIfSome("cursor", input.cursor)
        }
      })
    )
    const next = nextCursor(headers.link)
    if (json) return yield* printJson({ entries: body, next: Option.getOrNull(next) })
    if (body.length === 0) return yield* Console.log("No audit entries.")
    yield* Console.log(table([["TIME", "ACTION", "KEY", "FROM", "CHANGES"], ...body.map(auditRow)]))
    if (Option.isSome(next)) yield* Console.log(`Older entries: keys audit --cursor ${next.value}`)
  })
).pipe(
  Command.provide(Admin.layer),
  Command.withDescription("Show the admin API's audit trail, newest first (never a secret)")
)

const isoSeconds = (unixSeconds: number) => new Date(unixSeconds * 1_000).toISOString().replace(".000Z", "Z")

const usageLines = (id: string, usage: KeyUsage) => {
  const window = (name: string, { used, limit, remaining, reset }: KeyUsage["minute"]) =>
    `  ${name} ${used} of ${limit} used, ${remaining} left, resets ${isoSeconds(reset)}`
  return [
    id,
    window("minute:", usage.minute),
    window("day:   ", usage.day),
    `  ban:    ${usage.ban === null ? "none" : `until ${isoSeconds(usage.ban.until)}`}`
  ].join("\n")
}

const usage = Command.make(
  "usage",
  { id },
  ({ id }) => showAnswer((client) => client.keys.keyUsage({ params: { id } }), (usage) => usageLines(id, usage))
).pipe(
  Command.provide(Admin.layer),
  Command.withDescription("Show a key's use of its minute and day windows, and any ban")
)

const unban = Command.make(
  "unban",
  { id },
  Effect.fn(function*({ id }) {
    const { json } = yield* keys
    const admin = yield* Admin
    // The admin API answers 204 either way; its usage says whether there was a ban to end. Unbanned all the same,
    // in case one began in between.
    const { ban } = yield* admin.call((client) => client.keys.keyUsage({ params: { id } }))
    yield* admin.call((client) => client.keys.unbanKey({ params: { id } }))
    if (json) return yield* printJson({ id, unbanned: true, wasBanned: ban !== null })
    yield* Console.log(
      ban === null ? `${id} was not banned: nothing to do.` : `Unbanned ${id}: its ban has ended.`
    )
  })
).pipe(Command.provide(Admin.layer), Command.withDescription("End a key's ban now (its quota counts are kept)"))

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim()

// The default formatter frames a handler's failure in a multi-line ERROR block; one line is easier to read in a script's log.
const oneLineErrors = CliOutput.layer({
  ...CliOutput.defaultFormatter(),
  formatError: (error) => `keys: ${oneLine(error.message)}`
})

/**
 * A mistyped command gets its error first, on one line, and a pointer to the
 * help, instead of the whole help with the error at its end.
 */
const errorsFirst = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.error([
        ...event.errors.map((error) => `keys: ${oneLine(error.message)}`),
        `Try '${event.commandPath.join(" ")} --help'.`
      ].join("\n"))
      : CliOutput.defaultPresenter.present(event)
})

/** A mistyped command, already reported by `errorsFirst`: exit 2, like bad configuration. */
class UsageError extends Data.TaggedError("UsageError")<{}> {
  override get [Runtime.errorExitCode]() {
    return 2
  }
  override get [Runtime.errorReported]() {
    return false
  }
}

keys.pipe(
  Command.withSubcommands([create, list, roll, usage, setPlan, setRole, setExpiry, unban, revoke, audit]),
  Command.run({ version: "1.0.0" }),
  Effect.catchIf(
    (error) => CliError.isCliError(error) && error._tag === "ShowHelp" && error.errors.length > 0,
    () => Effect.fail(new UsageError())
  ),
  Effect.provide([NodeServices.layer, oneLineErrors, errorsFirst]),
  NodeRuntime.runMain
)
