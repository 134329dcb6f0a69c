import { CostsNoQuota, Stability } from "@petstore/contract"
import { Context, Effect, Option, SchemaAST } from "effect"
import { FindMyWay, HttpRouter } from "effect/http"
import { OpenApi } from "effect/http-api"

/** An operation the contract declares, as the edge needs to know it. */
export interface Operation {
  readonly method: string
  readonly path: string
  readonly deprecated: boolean
  /** Answered without spending quota (a banned key is still refused). */
  readonly costsNoQuota: boolean
  /** A beta operation: every answer says so (`Stability: beta`). */
  readonly beta: boolean
  /** The request headers it reads, lower case: `authorization` always, `content-type` with a body, its own. */
  readonly requestHeaders: ReadonlyArray<string>
}

/** The part of an `HttpApi` this module reads. */
export interface ApiRoutes {
  readonly groups: {
    readonly [group: string]: {
      readonly endpoints: {
        readonly [endpoint: string]: {
          readonly method: string
          readonly path: string
          readonly annotations: Context.Context<never>
          readonly headers?: { readonly ast: SchemaAST.AST } | undefined
          readonly payload?: ReadonlyMap<string, unknown>
        }
      }
    }
  }
}

type Params = Readonly<Record<string, string | undefined>>

/**
 * The router gives a parameter an empty segment (`/v1/pets/` matches
 * `/v1/pets/:petId`), but the contract has no such path: it is an unknown
 * path, not an invalid parameter.
 */
export const hasEmptyParameter = (params: Params) => {
  // A loop rather than Object.entries: the edge asks this on every request, and the entries are arrays.
  for (const name in params) {
    if (name !== "*" && Object.hasOwn(params, name) && params[name] === "") return true
  }
  return false
}

export interface RouteTable {
  /** The operation the router matched; none for a catch-all route, or for a path with an empty parameter. */
  readonly matched: (context: HttpRouter.RouteContext["Service"]) => Option.Option<Operation>
  /** The methods a path (and query) accepts, in the form of an `Allow` header: HEAD goes with GET. */
  readonly allowedMethods: (url: string) => ReadonlyArray<string>
  /** The operations at a path (and query), whatever their method. */
  readonly operationsAt: (url: string) => ReadonlyArray<Operation>
}

/** The header names an endpoint's headers schema declares: the property names of its (struct's) AST. */
const declaredHeaders = (schema: { readonly ast: SchemaAST.AST } | undefined): ReadonlyArray<string> =>
  schema !== undefined && SchemaAST.isObjects(schema.ast)
    ? schema.ast.propertySignatures.map((property) => String(property.name).toLowerCase())
    : []

/**
 * The operations an API declares, read from its contract, and matched by the
 * router's own matcher (FindMyWay) under the router's own configuration, so
 * that a path is judged exactly as the router judged it: percent-escapes
 * decoded, case and slashes as `routerConfig` (server.ts) says. It reads that
 * configuration from `HttpRouter.RouterConfig`, so it is built with the routes.
 */
export const routeTable = Effect.fnUntraced(function*(api: ApiRoutes) {
  const operations: ReadonlyArray<Operation> = Object.values(api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({
      method: endpoint.method,
      path: endpoint.path,
      deprecated: Context.getOrUndefined(endpoint.annotations, OpenApi.Deprecated) === true,
      costsNoQuota: Context.getOrUndefined(endpoint.annotations, CostsNoQuota) === true,
      beta: Context.getOrUndefined(endpoint.annotations, Stability) === "beta",
      requestHeaders: [
        "authorization",
        ...((endpoint.payload?.size ?? 0) > 0 ? ["content-type"] : []),
        ...declaredHeaders(endpoint.headers)
      ]
    }))
  )
  const matcher = FindMyWay.make<Operation>(yield* HttpRouter.RouterConfig)
  for (const operation of operations) matcher.on(operation.method, operation.path as FindMyWay.PathInput, operation)
  const byRoute = new Map(operations.map((operation) => [`${operation.method} ${operation.path}`, operation]))
  const methods = [...new Set(operations.map((operation) => operation.method))]
  /**
   * Each route's operation, found once: the router hands every request of a route the same route object, and the
   * edge asks on every request (a key string and an Option each time otherwise).
   */
  const ofRoute = new WeakMap<object, Option.Option<Operation>>()
  const operationOf = (route: HttpRouter.RouteContext["Service"]["route"]) => {
    let operation = ofRoute.get(route)
    if (operation === undefined) {
      operation = Option.fromNullishOr(byRoute.get(`${route.method} ${route.path}`))
      ofRoute.set(route, operation)
    }
    return operation
  }
  const none = Option.none<Operation>()

  return {
    matched: ({ params, route }) => hasEmptyParameter(params) ? none : operationOf(route),
    allowedMethods: (url) => {
      const allowed = methods.filter((method) => {
        const found = matcher.find(method, url)
        return found !== undefined && !hasEmptyParameter(found.params)
      })
      return allowed.includes("GET") ? [...allowed, "HEAD"] : allowed
    },
    operationsAt: (url) =>
      methods.flatMap((method) => {
        const found = matcher.find(method, url)
        return found === undefined || hasEmptyParameter(found.params) ? [] : [found.handler]
      })
  } satisfies RouteTable
})
