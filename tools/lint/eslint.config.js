// ESLint for the whole tree, run from the repository's root by `pnpm lint` (tools/lint's `lint` script). It lives in
// a package of its own because typescript-eslint's type-aware rules load the TypeScript 5 compiler API, which
// TypeScript 7 (what the packages build with) no longer has: this package's `typescript` is 5.9.
// Formatting is dprint's (`dprint check`), so no rule here is about layout.
import effect from "@effect/eslint-plugin"
import disableFormattingRules from "@effect/eslint-plugin/configs/disable-conflict-rules"
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import importX from "eslint-plugin-import-x"
import globals from "globals"
import path from "node:path"
import tseslint from "typescript-eslint"
import { noTypeImportCycle } from "./typeImportCycles.js"

const serverSource = "apps/server/src"

/**
 * The server's rooms, top to bottom. A file imports from its own room and the rooms below it, never from one above
 * (README "Layout"). Each room is a list of folders and files under apps/server/src; a new file goes in one of them.
 */
export const serverRooms = [
  { room: "main", paths: ["main.ts", "cluster.ts"] },
  { room: "server", paths: ["server.ts", "listeners.ts"] },
  { room: "http", paths: ["http"] },
  {
    room: "services",
    paths: ["auth", "pets", "orders", "quota", "events", "webhooks", "idempotency", "drain.ts"]
  },
  { room: "db", paths: ["db"] },
  {
    room: "config/net/observability",
    paths: ["config.ts", "configSecrets.ts", "configDescription.ts", "startupError.ts", "net", "observability"]
  }
]

/**
 * The tables the server writes, and the modules that may write each (INSERT, UPDATE, DELETE, MERGE, TRUNCATE):
 * the module that owns the table, and the few statements that must change two tables at once, named here so that
 * a new one is a decision someone reads. Migrations (db/migrations) create the tables and their triggers and are not
 * held to this.
 */
export const tableWriters = {
  pets: ["pets/Pets.ts", "orders/Orders.ts"], // Orders.ts: an order moves its pet's status in the same statement.
  orders: ["orders/Orders.ts"],
  api_keys: ["auth/ApiKeys.ts"],
  // ApiKeys.ts records each admin change in the statement that makes it; AdminAudit.ts sweeps the trail.
  admin_audit: ["auth/ApiKeys.ts", "auth/AdminAudit.ts"],
  quota_usage: ["quota/PostgresQuotaStore.ts"],
  idempotency_keys: ["idempotency/IdempotencyKeys.ts"],
  events: ["events/Events.ts", "webhooks/Deliveries.ts"], // Deliveries.ts: a test event is queued with its message.
  // Deliveries.ts disables an endpoint that keeps failing; WebhookEndpoints.ts drops a deleted endpoint's queue.
  webhook_endpoints: ["webhooks/WebhookEndpoints.ts", "webhooks/Deliveries.ts"],
  webhook_messages: ["webhooks/Deliveries.ts", "webhooks/WebhookEndpoints.ts"],
  webhook_attempts: ["webhooks/Deliveries.ts"],
  schema_migrations: ["db/migrate.ts"]
}

/** The configuration for the tree at `root`: the repository's, or the test's fixture tree (test/rules.test.ts). */
export const lintConfig = (root) => {
  const inServer = (relative) => path.join(root, serverSource, relative)

  /** No room imports from a room above it; http reaches the database only through a service or a db module. */
  const roomZones = [
    ...serverRooms.slice(1).map(({ paths, room }, index) => {
      const above = serverRooms.slice(0, index + 1)
      return {
        target: paths.map(inServer),
        from: above.flatMap((upper) => upper.paths.map(inServer)),
        message: `The ${room} room imports only from its own room and those below it: ${
          serverRooms.map((each) => each.room).join(" → ")
        } (tools/lint/eslint.config.js).`
      }
    }),
    {
      target: [inServer("http")],
      from: [inServer("db/Database.ts"), inServer("db/sql.ts")],
      message: "http runs no SQL: a service (or a db module) runs it and http calls that."
    }
  ]

  const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  /** A write to `table` in the text of a template literal, as `sql\`…\`` statements are written. */
  const writeTo = (table) => ({
    selector:
      `TemplateElement[value.raw=/\\b(INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|MERGE\\s+INTO|TRUNCATE(\\s+TABLE)?)\\s+${
        escapeRegExp(table)
      }\\b/i]`,
    message: `Only ${
      tableWriters[table].join(", ")
    } write the ${table} table (tableWriters in tools/lint/eslint.config.js).`
  })
  const tables = Object.keys(tableWriters)
  const writerFiles = [...new Set(Object.values(tableWriters).flat())]
  const serverFiles = (relative) => `${serverSource}/${relative}`

  const tableOwnership = [
    {
      files: [serverFiles("**/*.ts")],
      ignores: [...writerFiles.map(serverFiles), serverFiles("db/migrations/**")],
      rules: { "no-restricted-syntax": ["error", ...tables.map(writeTo)] }
    },
    ...writerFiles.map((file) => ({
      files: [serverFiles(file)],
      rules: {
        "no-restricted-syntax": ["error", ...tables.filter((table) => !tableWriters[table].includes(file)).map(writeTo)]
      }
    }))
  ]

  return defineConfig(
    {
      ignores: [
        "**/node_modules/**",
        "**/dist/**",
        "**/.turbo/**",
        "**/.data/**",
        "deploy/grafana/**",
        // The k6 scripts are not Node: load-tests/eslint.config.js holds them to ES2017 and k6's globals.
        "load-tests/*.js",
        "load-tests/lib/**",
        // Files made on purpose to break the rules, for the test that proves the rules bite.
        "tools/lint/test/fixtures/**"
      ]
    },
    js.configs.recommended,
    // Plain JavaScript outside the k6 scripts runs on Node (the root commands' scripts/runBuilt.js).
    { files: ["**/*.js"], languageOptions: { globals: globals.node } },
    ...tseslint.configs.recommended,
    ...disableFormattingRules,
    {
      files: ["**/*.ts"],
      plugins: {
        "@effect": effect,
        "import-x": importX,
        petstore: { rules: { "no-type-import-cycle": noTypeImportCycle } }
      },
      languageOptions: {
        parserOptions: {
          projectService: {
            // Config files no tsconfig includes are checked on their own.
            allowDefaultProject: ["packages/*/vitest.config.ts"],
            defaultProject: "tsconfig.base.json"
          },
          tsconfigRootDir: root
        }
      },
      settings: {
        "import-x/extensions": [".ts", ".js"]
      },
      linterOptions: { reportUnusedDisableDirectives: "error" },
      rules: {
        // What catches real bugs: a promise nobody awaits, a promise where a callback's result is ignored, `await`
        // on what is not a promise, a switch that forgets a case of a union, code nothing uses.
        "@typescript-eslint/no-floating-promises": "error",
        "@typescript-eslint/no-misused-promises": "error",
        "@typescript-eslint/await-thenable": "error",
        "@typescript-eslint/switch-exhaustiveness-check": [
          "error",
          { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false }
        ],
        "@typescript-eslint/no-unused-vars": ["error", {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrorsIgnorePattern: "^_",
          ignoreRestSiblings: true
        }],
        // As the Effect template has them: Effect code uses `any` in its type-level plumbing, namespaces, and `!`.
        "@typescript-eslint/no-explicit-any": "off",
        "@typescript-eslint/no-namespace": "off",
        "@typescript-eslint/no-non-null-assertion": "off",
        "@typescript-eslint/ban-ts-comment": "off",
        "@typescript-eslint/no-empty-object-type": "off",
        // Generators in Effect.gen need not yield (a service whose layer only builds a value).
        "require-yield": "off",
        "no-fallthrough": "off",
        "no-irregular-whitespace": "off",
        "prefer-rest-params": "off",
        "prefer-spread": "off",
        // Tests match a command's output, spaces and all.
        "no-regex-spaces": "off",
        // No import cycle anywhere in the tree: import-x reports the cycles of values; it does not follow `import type`
        // (erased at compile time) and has no option to, so a cycle with a type import in it is ours to report.
        "import-x/no-cycle": ["error", { ignoreExternal: true }],
        "petstore/no-type-import-cycle": "error"
      }
    },
    {
      // load-tests/tsconfig.json is the k6 scripts'; the Node suite beside them has a tsconfig of its own.
      files: ["load-tests/test/**/*.ts", "load-tests/vitest.config.ts"],
      languageOptions: {
        parserOptions: { projectService: false, project: "load-tests/tsconfig.test.json", tsconfigRootDir: root }
      }
    },
    {
      files: [serverFiles("**/*.ts")],
      rules: { "import-x/no-restricted-paths": ["error", { zones: roomZones }] }
    },
    ...tableOwnership
  )
}

export default lintConfig(path.resolve(import.meta.dirname, "../.."))
