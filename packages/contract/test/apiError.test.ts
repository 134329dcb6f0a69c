import { Effect, Exit, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as Contract from "../src/index.ts"
import { errorBodyOf, ErrorCode, errorStatusByCode, InvalidRequest, NotFound, RateLimited } from "../src/index.ts"

/** Every error class the contract exports: each is a Schema class whose instances are `Error`s. */
const errorClasses = Object.entries(Contract).filter(
  ([, value]) => Schema.isSchema(value) && typeof value === "function" && value.prototype instanceof globalThis.Error
) as Array<[string, typeof NotFound]>

describe("the contract's error classes", () => {
  it("are one class per error code", () => {
    expect(errorClasses.length).toBe(Object.keys(errorStatusByCode).length - 1) // api_key_banned is a RateLimited
    expect(errorClasses.map(([name]) => name)).toContain("NotFound")
  })

  it.each(errorClasses)("%s carries its name as `_tag`, and leaves it out of the body it encodes to", (name, Class) => {
    // `code` and `status` fill themselves in, but for RateLimited, which says which of its two codes it is.
    const error = new Class({ message: "m", ...(name === "RateLimited" ? { code: "rate_limited" } : {}) } as never)
    const code = error.code as ErrorCode
    expect(error._tag).toBe(name)
    expect(error.name).toBe(name)
    const body = { code, message: "m", status: errorStatusByCode[code] }
    expect(Schema.encodeSync(Class)(error)).toStrictEqual(body)
    expect(errorBodyOf(error)).toStrictEqual(body)
    // A body as the wire carries it, without `_tag`, decodes to the class, tag and all.
    const decoded = Schema.decodeUnknownSync(Class)(body)
    expect(decoded).toBeInstanceOf(Class)
    expect(decoded._tag).toBe(name)
  })

  it("keeps `details` and the banned variant of RateLimited in the body", () => {
    const details = [{ path: "body.name", message: "Expected a name" }]
    expect(errorBodyOf(new InvalidRequest({ message: "bad", details }))).toStrictEqual({
      code: "invalid_request",
      message: "bad",
      status: 400,
      details
    })
    expect(Schema.encodeSync(RateLimited)(new RateLimited({ code: "api_key_banned", message: "banned" })))
      .toStrictEqual({ code: "api_key_banned", message: "banned", status: 429 })
  })

  it("are picked apart by Effect.catchTag and Effect.catchTags", async () => {
    const failing = (error: NotFound | RateLimited) => Effect.fail(error)
    const byTag = await Effect.runPromise(
      failing(new NotFound({ message: "No pet has id 42" })).pipe(
        Effect.catchTag("NotFound", (error) => Effect.succeed(`caught ${error.code}`))
      )
    )
    expect(byTag).toBe("caught not_found")
    const byTags = await Effect.runPromise(
      failing(new RateLimited({ code: "rate_limited", message: "slow down" })).pipe(
        Effect.catchTags({
          NotFound: () => Effect.succeed("not found"),
          RateLimited: (error) => Effect.succeed(`caught ${error.status}`)
        })
      )
    )
    expect(byTags).toBe("caught 429")
    const untouched = await Effect.runPromiseExit(
      failing(new RateLimited({ code: "rate_limited", message: "slow down" })).pipe(
        Effect.catchTag("NotFound", () => Effect.succeed("wrongly caught"))
      )
    )
    expect(Exit.isFailure(untouched)).toBe(true)
  })
})
