import { createRequire } from "node:module"
import { defineConfig, type Plugin } from "rolldown"

const require = createRequire(import.meta.url)
const REQUIRED_HTTP = "\0petstore:node-http-required"

/**
 * `node:http` through `require()` rather than `import`. An ESM import of a built-in module reads all of its
 * exports to make the namespace, and Node 24's `http` has lazy `WebSocket`, `CloseEvent` and `MessageEvent`
 * exports: reading them loads Node's fetch (undici) and HTTP/2, some 6 MiB resident that the server never
 * uses (bench/RESULTS.md, "Issue 35"). Only the exports that are plain values are re-exported: an import of
 * any other (`globalAgent`, `maxHeaderSize`) fails the build instead of reading a stale copy.
 */
const httpThroughRequire: Plugin = {
  name: "petstore:node-http-through-require",
  resolveId: (source) => (source === "node:http" || source === "http" ? REQUIRED_HTTP : null),
  load: (id) => {
    if (id !== REQUIRED_HTTP) return null
    const names = Object.entries(Object.getOwnPropertyDescriptors(require("node:http")))
      .filter(([, descriptor]) => "value" in descriptor)
      .map(([name]) => name)
    return [
      `import { createRequire } from "node:module"`,
      `const http = createRequire(import.meta.url)("node:http")`,
      `export default http`,
      `export const { ${names.join(", ")} } = http`
    ].join("\n")
  }
}

/**
 * The server as one bundle (`pnpm build`): only what is reachable, without comments and in ASCII, so that the
 * source text V8 keeps for lazy compilation is a one-byte string. PGlite and `redis` stay outside it, imported
 * only when chosen.
 */
export default defineConfig({
  input: "src/main.ts",
  platform: "node",
  external: ["@electric-sql/pglite", "redis"],
  plugins: [httpThroughRequire],
  output: { dir: "dist", format: "esm", sourcemap: true, cleanDir: true, comments: false, charset: "ascii" }
})
