// ESLint 9 flat config for the k6 scripts. k6 is not Node and not a browser: its globals are declared here.
import js from "@eslint/js"
import globals from "globals"

/** Globals the k6 runtime provides (https://grafana.com/docs/k6/latest/using-k6/execution-context-variables/). */
const k6Globals = {
  __ENV: "readonly",
  __VU: "readonly",
  __ITER: "readonly",
  open: "readonly",
  console: "readonly"
}

export default [
  { ignores: ["node_modules/**"] },
  js.configs.recommended,
  {
    files: ["**/*.js"],
    ignores: ["eslint.config.js"],
    languageOptions: {
      // k6 before 0.52 compiles scripts with a Babel that parses ES2017 syntax and no later (no `??`, `?.`,
      // object spread, optional catch binding or class fields) and refuses the whole script, so the scripts
      // are held to ES2017 here; test/k6.system.test.ts runs them on the oldest and the newest real k6.
      ecmaVersion: 2017,
      sourceType: "module",
      globals: k6Globals
    },
    rules: {
      "no-unused-vars": ["error", { argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
      "no-var": "error",
      "prefer-const": "error",
      eqeqeq: ["error", "always"],
      "no-shadow": "error",
      "no-implicit-globals": "error",
      "no-restricted-globals": ["error", { name: "fetch", message: "k6 has no fetch: use k6/http." }, {
        name: "setTimeout",
        message: "use sleep() from k6, or import it from k6/timers."
      }, { name: "process", message: "k6 is not Node: read __ENV." }]
    }
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { ecmaVersion: "latest", sourceType: "module", globals: globals.node }
  }
]
