import { Context } from "effect"
import { OpenApi } from "effect/http-api"

export interface RouteEntry {
  readonly method: string
  readonly path: string
  readonly pattern: RegExp
  readonly deprecated: boolean
  readonly annotations: Context.Context<never>
}

/** Exactly the path as declared, as the router matches it (see `routerConfig` in server.ts): no trailing slash, case and all. */
const toPattern = (path: string) =>
  new RegExp(`^${path.split("/").map((segment) => segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("/")}$`)

/** The part of an `HttpApi` this module reads. */
export interface ApiRoutes {
  readonly groups: {
    readonly [group: string]: {
      readonly endpoints: {
        readonly [endpoint: string]: {
          readonly method: string
          readonly path: string
          readonly annotations: Context.Context<never>
        }
      }
    }
  }
}

/** The routes an API declares, read from its contract: what 405's `Allow` and the deprecation headers are built from. */
export const routeTable = (api: ApiRoutes): ReadonlyArray<RouteEntry> =>
  Object.values(api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({
      method: endpoint.method,
      path: endpoint.path,
      pattern: toPattern(endpoint.path),
      deprecated: Context.getOrUndefined(endpoint.annotations, OpenApi.Deprecated) === true,
      annotations: endpoint.annotations
    }))
  )

/** The methods a path accepts, in the form of an `Allow` header (HEAD goes with GET). */
export const allowedMethods = (table: ReadonlyArray<RouteEntry>, path: string): ReadonlyArray<string> => {
  const methods = new Set(table.filter((route) => route.pattern.test(path)).map((route) => route.method))
  if (methods.has("GET")) methods.add("HEAD")
  return [...methods]
}
