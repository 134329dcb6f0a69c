import { Effect } from "effect"
import { type Check, type Phase, skipped } from "./checks.ts"
import { GENERAL_PHASE, type RunContext } from "./context.ts"
import { ensure, header, inOneWindow, integerHeader } from "./expect.ts"
import { anonymous, describeResponse, type Exchange, Http, withKey } from "./http.ts"

export const CORS_PHASE = "cors"

/** An origin no deployment allows: `.invalid` never resolves (RFC 6761). */
const OTHER_ORIGIN = "https://conformance-not-allowed.invalid"

/** What a page reads beyond the CORS-safelisted headers, which the README says are exposed. */
const EXPOSED = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "location", "link"]
  .concat(["etag", "x-request-id"])

const listOf = (exchange: Exchange, name: string) =>
  (header(exchange, name) ?? "").split(",").map((part) => part.trim().toLowerCase()).filter((part) => part !== "")

/**
 * CORS (docs/security.md, "Calling the API from a browser (CORS)"), an extension: only with `--cors-origin ORIGIN`, an
 * origin the deployment allows, since CORS is off by default.
 */
export const corsPhase = (run: RunContext): Effect.Effect<Phase> =>
  Effect.sync(() => {
    const origin = run.corsOrigin
    const preflight = (from: string, method: string) =>
      Http.use((http) =>
        http.send({
          method: "OPTIONS",
          path: "/pets",
          credential: anonymous,
          headers: {
            origin: from,
            "access-control-request-method": method,
            "access-control-request-headers": "authorization, content-type"
          },
          retryWhenLimited: false
        })
      )
    const allowsOrigin = (exchange: Exchange, from: string) =>
      [from, "*"].includes(header(exchange, "access-control-allow-origin") ?? "")

    const check = (id: string, title: string, body: Check["run"]): Check => ({
      id,
      area: "cors",
      tag: "extension",
      title,
      run: origin === undefined
        ? Effect.fail(skipped("give --cors-origin ORIGIN, an origin the deployment allows (CORS_ALLOWED_ORIGINS)"))
        : body
    })

    return {
      name: CORS_PHASE,
      after: [GENERAL_PHASE],
      checks: [
        check(
          "cors.preflight",
          "a preflight from the allowed origin: 204 with its origin, the path's methods and request headers",
          Effect.gen(function*() {
            const answer = yield* preflight(origin!, "POST")
            yield* ensure(
              answer.status === 204 && allowsOrigin(answer, origin!) &&
                ["get", "post"].every((method) => listOf(answer, "access-control-allow-methods").includes(method)) &&
                ["authorization", "content-type"].every((name) =>
                  listOf(answer, "access-control-allow-headers").includes(name)
                ) && integerHeader(answer, "access-control-max-age") > 0,
              answer,
              `204 with Access-Control-Allow-Origin ${origin}, -Allow-Methods GET and POST, ` +
                "-Allow-Headers Authorization and Content-Type, and -Max-Age"
            )
          })
        ),
        check(
          "cors.preflight-no-quota",
          "preflights spend no quota: the anonymous quota is the same before and after three",
          Effect.gen(function*() {
            const unauthenticated = Http.use((http) =>
              http.send({ path: "/pets?limit=1", credential: anonymous, retryWhenLimited: false })
            )
            const [before, after] = yield* inOneWindow(Effect.gen(function*() {
              const first = yield* unauthenticated
              for (let i = 0; i < 3; i++) yield* preflight(i === 1 ? OTHER_ORIGIN : origin!, "GET")
              return [first, yield* unauthenticated]
            }))
            yield* ensure(
              integerHeader(after!, "x-ratelimit-remaining") === integerHeader(before!, "x-ratelimit-remaining") - 1,
              after!,
              `X-RateLimit-Remaining one less than before the preflights (${
                header(before!, "x-ratelimit-remaining")
              }): the second request alone spent one`,
              describeResponse(after!, ["x-ratelimit-remaining", "x-ratelimit-reset"])
            )
          })
        ),
        check(
          "cors.actual",
          "an answer to the allowed origin carries its origin and exposes the headers a client reads",
          Effect.gen(function*() {
            const key = run.generalKey
            if (key === undefined) return yield* Effect.fail(skipped("no key for the general checks"))
            const answer = yield* Http.use((http) =>
              http.send({ path: "/pets?limit=1", credential: withKey(key), headers: { origin: origin! } })
            )
            const missing = EXPOSED.filter((name) => !listOf(answer, "access-control-expose-headers").includes(name))
            yield* ensure(
              allowsOrigin(answer, origin!) && missing.length === 0,
              answer,
              `Access-Control-Allow-Origin ${origin}, and Access-Control-Expose-Headers listing ${EXPOSED.join(", ")}`,
              `${missing.length === 0 ? "" : `missing ${missing.join(", ")}: `}${
                describeResponse(answer, ["access-control-allow-origin", "access-control-expose-headers"])
              }`
            )
          })
        ),
        check(
          "cors.other-origin",
          "a preflight from an origin not allowed: no Access-Control-Allow-Origin for it, so the browser refuses",
          Effect.gen(function*() {
            const answer = yield* preflight(OTHER_ORIGIN, "GET")
            const allowOrigin = header(answer, "access-control-allow-origin")
            yield* ensure(
              answer.status < 500 && (allowOrigin === undefined || allowOrigin === "*"),
              answer,
              `no Access-Control-Allow-Origin naming ${OTHER_ORIGIN} (or * when every origin is allowed)`
            )
          })
        )
      ]
    }
  })
