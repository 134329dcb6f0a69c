import { configDefaults, type TestProjectInlineConfiguration } from "vitest/config"

/**
 * The two lanes of every package's tests, told apart by the file's suffix alone:
 * - `fast` (`*.test.ts`): `pnpm test`, a few minutes in all, what a change runs before it is pushed;
 * - `system` (`*.system.test.ts`): `pnpm test:system`, real process clusters, failovers, poolers, TLS, browsers,
 *   packed installs, k6, the fleet and the images: minutes each.
 * A package's `vitest run --project fast` or `--project system` picks one; `vitest run` alone runs both.
 */
export const lanes: Array<TestProjectInlineConfiguration> = [
  {
    extends: true,
    test: { name: "fast", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "**/*.system.test.ts"] }
  },
  { extends: true, test: { name: "system", include: ["test/**/*.system.test.ts"] } }
]
