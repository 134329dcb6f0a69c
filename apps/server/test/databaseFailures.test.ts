import { Cause, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { DatabaseError } from "../src/db/DatabaseError.ts"
import { withoutDatabaseError } from "../src/http/databaseFailures.ts"
import { renderCause } from "../src/http/errors.ts"
import { PetMissing } from "../src/pets/PetRefusals.ts"

const outage = new DatabaseError({ cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) })
const refusedStatement = new DatabaseError({ cause: Object.assign(new Error("syntax error"), { code: "42601" }) })

const service = {
  find: (id: number): Effect.Effect<string, PetMissing | DatabaseError> =>
    id === 1 ? Effect.succeed("Rex") : id === 2 ? Effect.fail(new PetMissing({ petId: id })) : Effect.fail(outage),
  count: Effect.fail(refusedStatement) as Effect.Effect<number, DatabaseError>
}

const answerOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Effect.runPromise(renderCause(exit.cause)) : Promise.reject(new Error("expected a failure"))

describe("withoutDatabaseError, the one policy for a database failure under a handler", () => {
  const handlers = withoutDatabaseError(service)

  it("leaves answers and refusals as they are", async () => {
    expect(await Effect.runPromise(handlers.find(1))).toBe("Rex")
    const refused = await Effect.runPromiseExit(handlers.find(2))
    expect(Exit.isFailure(refused) && Cause.squash(refused.cause)).toEqual(new PetMissing({ petId: 2 }))
    expect(Exit.isFailure(refused) && Cause.hasDies(refused.cause)).toBe(false)
  })

  it("hands an unavailable database on as a defect, which renderCause answers 503 with Retry-After", async () => {
    const exit = await Effect.runPromiseExit(handlers.find(3))
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    const answer = await answerOf(exit)
    expect(answer.status).toBe(503)
    expect(answer.headers["retry-after"]).toBe("5")
  })

  it("hands any other database failure on as a defect, answered 500, and wraps members that are effects too", async () => {
    const exit = await Effect.runPromiseExit(handlers.count)
    expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    const answer = await answerOf(exit)
    expect(answer.status).toBe(500)
    expect(answer.headers["retry-after"]).toBeUndefined()
  })
})
