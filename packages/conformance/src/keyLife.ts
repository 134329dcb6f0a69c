import { Effect } from "effect"
import { type Admin, ADMIN_HINT } from "./admin.ts"
import { type Check, type Phase, skipped } from "./checks.ts"
import type { RunContext } from "./context.ts"
import { CORS_PHASE } from "./cors.ts"
import { ensure, expectError, failure, header } from "./expect.ts"
import { describeResponse, type Exchange, Http, withKey } from "./http.ts"
import type { ApiKey, CheckFailed } from "./model.ts"

export const KEY_LIFE_PHASE = "keys"

/**
 * README "Admin API": should a process miss the announcement of a change, it trusts a looked-up key for at most
 * 4 seconds. A refusal the suite expects may come that much later; a second's margin covers a clock's rounding.
 */
export const REVOCATION_BOUND_SECONDS = 4
const MARGIN_MILLIS = 1_000

/** How far ahead the expiring key's `expiresAt` lies: room for its first request on a busy machine. */
const EXPIRY_LEAD_SECONDS = 15
/** The first roll's overlap: both secrets are tried within it, then the old one after it. */
const ROLL_OVERLAP_SECONDS = 15
/** The overlaps of the rolls that show at most two secrets live: longer than the check. */
const LONG_OVERLAP_SECONDS = 600

/** The most admin requests one of these checks sends (the keys it makes, rolls, revocations). */
const MAX_ADMIN_REQUESTS = 10

const sleepUntil = (at: number) => Effect.suspend(() => Effect.sleep(Math.max(0, at - Date.now())))

const fieldOf = (exchange: Exchange, name: string) => {
  const value = (exchange.json as Record<string, unknown> | undefined)?.[name]
  return typeof value === "string" ? value : undefined
}

/**
 * Key expiry and rolling (README "Admin API": "Expiry", "Rolling a key"), an extension: only with admin access,
 * since the checks make keys of their own. Every key they make is revoked when the check ends, passing, failing
 * or interrupted; the run revokes any left over (`release`).
 */
export const keyLifePhase = (
  run: RunContext,
  admin: Admin | undefined
): { phase: Phase; release: Effect.Effect<void> } => {
  const check = (
    id: string,
    title: string,
    body: (
      ops: ReturnType<typeof operations>
    ) => Effect.Effect<void, CheckFailed | ReturnType<typeof skipped>, Http>
  ): Check => ({
    id,
    area: "keys",
    tag: "extension",
    title,
    maxRequests: 20,
    run: admin === undefined
      ? Effect.fail(skipped(`${ADMIN_HINT}, to check key expiry and rolling`))
      : Effect.suspend(() => {
        const ops = operations(run, admin, id)
        return body(ops).pipe(Effect.ensuring(ops.revokeMine))
      })
  })

  const expiry = check(
    "keys.expiry",
    `a key made to expire ${EXPIRY_LEAD_SECONDS} s ahead works, then is refused with 401 invalid_token`,
    (ops) =>
      Effect.gen(function*() {
        const made = yield* ops.create("expiry", {
          expiresAt: new Date(Date.now() + EXPIRY_LEAD_SECONDS * 1000).toISOString()
        })
        // How long the key lives, by the service's own clock (createdAt and expiresAt both come from it).
        const createdAt = Date.parse(fieldOf(made.exchange, "createdAt") ?? "")
        const expiresAt = Date.parse(fieldOf(made.exchange, "expiresAt") ?? "")
        yield* ensure(
          Number.isFinite(createdAt) && Number.isFinite(expiresAt) && expiresAt > createdAt,
          made.exchange,
          "201 with the key's view, its createdAt and an expiresAt after it"
        )
        const lives = expiresAt - createdAt
        // The service made the key between the request's sending and its answer: it expires within that span, shifted.
        const expiresNoSoonerThan = made.exchange.sentAt + lives
        const expiresNoLaterThan = made.exchange.receivedAt + lives
        yield* ops.works(made.key, "the expiring key, before its expiresAt", expiresNoSoonerThan)
        yield* ops.refused(made.key, "the expiring key, after its expiresAt", expiresNoLaterThan)
        yield* ops.revoke(made.id)
      })
  )

  const rolling = check(
    "keys.rolling",
    `a rolled key: both secrets work for a ${ROLL_OVERLAP_SECONDS} s overlap, then only the new; rolling twice leaves two live`,
    (ops) =>
      Effect.gen(function*() {
        const made = yield* ops.create("rolling")
        const first = yield* ops.roll(made, ROLL_OVERLAP_SECONDS)
        // The service chose the overlap's start between the roll's sending and its answer.
        const overlapNoSoonerThan = first.exchange.sentAt + ROLL_OVERLAP_SECONDS * 1000
        const overlapNoLaterThan = first.exchange.receivedAt + ROLL_OVERLAP_SECONDS * 1000
        yield* ops.works(made.key, "the secret before the roll, during the overlap", overlapNoSoonerThan)
        yield* ops.works(first.key, "the new secret, during the overlap", overlapNoSoonerThan)
        yield* ops.refused(made.key, "the secret before the roll, after the overlap", overlapNoLaterThan)
        yield* ops.works(first.key, "the new secret, after the overlap")

        // Rolling during an overlap ends the older secret at once: at most two live.
        const second = yield* ops.roll({ ...made, key: first.key }, LONG_OVERLAP_SECONDS)
        const third = yield* ops.roll({ ...made, key: second.key }, LONG_OVERLAP_SECONDS)
        yield* ops.refused(
          first.key,
          "the secret two rolls back, after rolling again during its successor's overlap",
          third.exchange.receivedAt
        )
        yield* ops.works(second.key, "the secret one roll back, during its overlap")
        yield* ops.works(third.key, "the newest secret")
        yield* ops.revoke(made.id)
      })
  )

  return {
    phase: {
      name: KEY_LIFE_PHASE,
      // After the CORS checks (which run after the general ones): those count the anonymous quota of this address,
      // which every request with a refused key spends.
      after: [CORS_PHASE],
      checks: [expiry, rolling]
    },
    release: admin === undefined ? Effect.void : Effect.gen(function*() {
      const left = yield* admin.revokeAll
      if (left.length > 0) {
        run.progress(
          `keys: could not revoke ${left.join(", ")}, made by this run: revoke ${
            left.length === 1 ? "it" : "them"
          } with DELETE /admin/keys/ID`
        )
      }
    })
  }
}

interface MadeKey {
  readonly id: string
  readonly key: string
  readonly exchange: Exchange
}

/** What the keys.* checks do, each request bounded, each key made recorded for revocation. */
const operations = (run: RunContext, admin: Admin, checkId: string) => {
  const counter = { sent: 0, most: MAX_ADMIN_REQUESTS }
  const mine: Array<string> = []
  let secrets = 0

  const apiKey = (secret: string): ApiKey => ({ plan: "free", secret, label: `${checkId} secret ${++secrets}` })

  const learned = (exchange: Exchange, status: number, what: string) =>
    Effect.gen(function*() {
      const key = fieldOf(exchange, "key")
      const id = fieldOf(exchange, "id")
      // Hidden before anything can report it, passing or not.
      if (key !== undefined) run.hideSecret?.(key)
      yield* ensure(exchange.status === status && key !== undefined && id !== undefined, exchange, what)
      return { id: id!, key: key!, exchange }
    })

  const create = (purpose: string, fields: Record<string, unknown> = {}) =>
    Effect.gen(function*() {
      const exchange = yield* admin.send({
        method: "POST",
        path: "/admin/keys",
        json: { plan: "free", name: `conformance-${run.runId}-${purpose}`, ...fields }
      }, counter)
      const made = yield* learned(exchange, 201, "201 with the new key's id and its secret, key")
      mine.push(made.id)
      admin.made(made.id)
      return made
    })

  const roll = (made: MadeKey, overlapSeconds: number) =>
    Effect.gen(function*() {
      const exchange = yield* admin.send({
        method: "POST",
        path: `/admin/keys/${encodeURIComponent(made.id)}/roll`,
        json: { overlapSeconds }
      }, counter)
      const rolled = yield* learned(exchange, 200, "200 with the key's id and its new secret, key")
      yield* ensure(
        rolled.id === made.id && rolled.key !== made.key,
        exchange,
        `the same id (${made.id}) and a secret other than the one before`,
        `id ${rolled.id}, ${rolled.key === made.key ? "the same secret" : "a new secret"}`
      )
      return rolled
    })

  const use = (secret: string) =>
    Http.use((http) => http.send({ path: "/pets?limit=1", credential: withKey(apiKey(secret)) }))

  /** 200, for a request answered before `answeredBefore` (after it, the service was too slow to tell). */
  const works = (secret: string, what: string, answeredBefore = Number.POSITIVE_INFINITY) =>
    Effect.gen(function*() {
      const answer = yield* use(secret)
      if (answer.status === 200) return
      if (answer.receivedAt >= answeredBefore) {
        return yield* failure(
          answer,
          `200 for ${what}`,
          `${describeResponse(answer)}, but only ${
            Math.round((answer.receivedAt - answeredBefore) / 1000)
          } s after the time it had to be answered by: the service was too slow to tell`
        )
      }
      return yield* failure(answer, `200 for ${what}`)
    })

  const isInvalidToken = (answer: Exchange) => /error="?invalid_token"?/.test(header(answer, "www-authenticate") ?? "")

  /**
   * 401 invalid_token, as for an unknown key, from `from` on; at once, or at the latest once the revocation bound
   * has passed.
   */
  const refused = (secret: string, what: string, from: number) =>
    Effect.gen(function*() {
      yield* sleepUntil(from)
      let answer = yield* use(secret)
      if (answer.status !== 401) {
        yield* sleepUntil(from + REVOCATION_BOUND_SECONDS * 1000 + MARGIN_MILLIS)
        answer = yield* use(secret)
      }
      const expected = `401 for ${what}, within the revocation bound (${REVOCATION_BOUND_SECONDS} s)`
      yield* expectError(answer, 401).pipe(Effect.mapError(() => failure(answer, `${expected}, with an Error body`)))
      yield* ensure(
        isInvalidToken(answer),
        answer,
        `${expected}, with WWW-Authenticate error="invalid_token" as for an unknown key`,
        describeResponse(answer, ["www-authenticate"])
      )
    })

  const revoke = (id: string) =>
    Effect.gen(function*() {
      const exchange = yield* admin.send({ method: "DELETE", path: `/admin/keys/${encodeURIComponent(id)}` }, counter)
      yield* ensure(exchange.status === 204, exchange, "204: the key this check made is revoked")
      yield* Effect.sync(() => {
        mine.splice(mine.indexOf(id), 1)
        admin.revoked(id)
      })
    })

  return {
    create,
    roll,
    works,
    refused,
    revoke,
    /** Whatever ended the check, the keys it made and did not revoke are revoked now. */
    revokeMine: Effect.suspend(() => Effect.forEach([...mine], admin.revoke, { discard: true }))
  }
}
