import { Data, Effect } from "effect"
import type { Exchange } from "./http.ts"
import { CheckFailed } from "./model.ts"
import { send as sendOnWire, TransportError } from "./transport.ts"

/**
 * The deployment's admin API (`--admin-url`, the admin token from CONFORMANCE_ADMIN_TOKEN or
 * `--admin-token-file`), which the keys.* checks need to make keys of their own: one that expires, one to roll.
 * The token is sent only as the Authorization header of these requests; nothing the suite reports shows it.
 */
export interface AdminAccess {
  /** The admin listener's address, e.g. `http://127.0.0.1:8081` (the paths start with `/admin`). */
  readonly url: string
  readonly token: string
}

/** How a request with the admin token is described in a report: never the token. */
const ADMIN_CREDENTIAL = "Bearer <admin token>"

/** How to give admin access, in the command line's terms (none of which puts the token on the command line). */
export const ADMIN_HINT = "give --admin-url URL, the admin listener's address, and the admin token in " +
  "CONFORMANCE_ADMIN_TOKEN or a file named by --admin-token-file"

/** Admin access the suite cannot use: a wrong address, a refused token. Bad usage, not a finding about the service. */
export class InvalidAdminAccess extends Data.TaggedError("InvalidAdminAccess")<{ readonly message: string }> {}

/** `http://host:8081`, `http://host:8081/` and `http://host:8081/admin` all name the same listener. */
export const normalizeAdminUrl = (value: string) => {
  const trimmed = value.trim().replace(/\/+$/, "").replace(/\/admin$/, "")
  return URL.canParse(trimmed) && /^https?:$/.test(new URL(trimmed).protocol) ? trimmed : undefined
}

export interface AdminSettings extends AdminAccess {
  readonly requestTimeoutSeconds: number
}

export interface AdminRequest {
  readonly method?: string
  /** Below the admin listener's address: `/admin/keys`. */
  readonly path: string
  readonly json?: unknown
}

const parse = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** One request with the admin token, as an Exchange so that a failure shows it as any other; not observed by the run's invariants. */
export const adminSend = (settings: AdminSettings, request: AdminRequest) =>
  Effect.tryPromise({
    try: async (signal): Promise<Exchange> => {
      const method = request.method ?? "GET"
      const url = `${settings.url}${request.path}`
      const headers: Record<string, string> = { accept: "application/json" }
      const body = request.json === undefined ? undefined : JSON.stringify(request.json)
      if (body !== undefined) headers["content-type"] = "application/json"
      const sentAt = Date.now()
      const response = await sendOnWire({
        method,
        url,
        headers: { ...headers, authorization: `Bearer ${settings.token}` },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(settings.requestTimeoutSeconds * 1000)])
      })
      return {
        method,
        url,
        credential: ADMIN_CREDENTIAL,
        authorization: { _tag: "None" },
        requestHeaders: headers,
        requestBody: body,
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        text: response.text,
        json: parse(response.text),
        sentAt,
        receivedAt: Date.now()
      }
    },
    catch: (error) => ({
      request: `${request.method ?? "GET"} ${settings.url}${request.path} (${ADMIN_CREDENTIAL})`,
      message: error instanceof Error ? error.message : String(error),
      nothingThere: error instanceof TransportError && error.nothingThere
    })
  })

/**
 * Before any check: the admin API answers at the address with this token, so that a mistyped address or a wrong
 * token stops the run at once, as a refused API key does. `GET /admin/audit?limit=1` reads one entry at most.
 */
export const probeAdmin = (settings: AdminSettings) =>
  Effect.gen(function*() {
    const answer = yield* adminSend(settings, { path: "/admin/audit?limit=1" }).pipe(
      Effect.catch((failed) =>
        Effect.fail(
          new InvalidAdminAccess({
            message: `cannot reach the admin API at ${settings.url}: ${failed.message}; is --admin-url the ` +
              "admin listener's address (ADMIN_HOST:ADMIN_PORT), and is the service up?"
          })
        )
      )
    )
    if (answer.status === 401 || answer.status === 403) {
      return yield* new InvalidAdminAccess({
        message: `the admin API at ${settings.url} refused the admin token (${answer.status}): give the ` +
          "deployment's ADMIN_TOKEN in CONFORMANCE_ADMIN_TOKEN or a file named by --admin-token-file"
      })
    }
    if (answer.status === 404) {
      return yield* new InvalidAdminAccess({
        message: `no admin API at ${settings.url} (GET /admin/audit answered 404): --admin-url is the admin ` +
          "listener's address (ADMIN_HOST:ADMIN_PORT), not the API's, and without /v1"
      })
    }
    if (answer.status !== 200) {
      return yield* new InvalidAdminAccess({
        message: `the admin API at ${settings.url} answered GET /admin/audit?limit=1 with ${answer.status} ` +
          `${answer.statusText}, not 200: is --admin-url the admin listener's address?`
      })
    }
  })

/**
 * The admin API as the keys.* checks use it: bounded in requests like every check (the run's per-check bound
 * counts only the API's requests, so these have their own), and every key made is recorded so that it is revoked
 * at the end of its check, or of the run, whatever ends them.
 */
export const makeAdmin = (settings: AdminSettings) => {
  /** Keys made and not yet revoked, by id. */
  const made = new Set<string>()

  const send = (request: AdminRequest, counter: { sent: number; readonly most: number }) =>
    Effect.suspend(() =>
      ++counter.sent > counter.most
        ? Effect.fail(
          new CheckFailed({
            request: `${request.method ?? "GET"} ${settings.url}${request.path}, admin request ${counter.sent}`,
            expected: `an outcome within ${counter.most} admin requests, the most this check sends`,
            received: "the admin API's answers kept the check going"
          })
        )
        : adminSend(settings, request).pipe(
          Effect.catch((failed) =>
            Effect.fail(
              new CheckFailed({
                request: failed.request,
                expected: "an HTTP response from the admin API",
                received: `no response: ${failed.message}`
              })
            )
          )
        )
    )

  /** Revokes a key the suite made; true when it is gone (204, or 404: revoked already). */
  const revoke = (id: string) =>
    adminSend({ ...settings, requestTimeoutSeconds: Math.min(settings.requestTimeoutSeconds, 10) }, {
      method: "DELETE",
      path: `/admin/keys/${encodeURIComponent(id)}`
    }).pipe(
      Effect.map((answer) => answer.status === 204 || answer.status === 404),
      Effect.catch(() => Effect.succeed(false)),
      Effect.tap((gone) =>
        Effect.sync(() => {
          if (gone) made.delete(id)
        })
      )
    )

  /** Revokes every key made and not revoked yet; the ids it could not revoke. */
  const revokeAll = Effect.suspend(() =>
    Effect.forEach([...made], revoke, { concurrency: 4 }).pipe(Effect.map(() => [...made]))
  )

  return {
    send,
    made: (id: string) => made.add(id),
    /** A key its check revoked itself. */
    revoked: (id: string) => made.delete(id),
    revoke,
    revokeAll
  }
}

export type Admin = ReturnType<typeof makeAdmin>
