import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { parseRedisUrl } from "../src/net/redisUrl.ts"

describe("REDIS_URL, read once by the configuration", () => {
  it("a Cluster's seed nodes: the URLs without their parameters, the seed's credentials decoded, the TLS files' paths", () => {
    const setting = "rediss://quotas:p%40ss@a:6379?sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/c.key, " +
      "rediss://quotas:p%40ss@b:6379?sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/c.key"
    expect(Result.getOrThrow(parseRedisUrl(setting))).toEqual({
      text: setting,
      urls: ["rediss://quotas:p%40ss@a:6379", "rediss://quotas:p%40ss@b:6379"],
      username: "quotas",
      password: "p@ss",
      tls: { sslRootCert: "/ca.pem", sslCert: "/c.pem", sslKey: "/c.key" }
    })
  })

  it("redis:// has no TLS; rediss:// without sslrootcert, or with `system`, trusts the system's CAs", () => {
    expect(Result.getOrThrow(parseRedisUrl("redis://127.0.0.1:6379"))).toMatchObject({
      urls: ["redis://127.0.0.1:6379"],
      username: undefined,
      password: undefined,
      tls: undefined
    })
    for (const url of ["rediss://h:1", "rediss://h:1?sslrootcert=system"]) {
      expect(Result.getOrThrow(parseRedisUrl(url)).tls).toEqual({
        sslRootCert: undefined,
        sslCert: undefined,
        sslKey: undefined
      })
    }
  })

  it.each([
    ["redis://h:1?sslrootcert=/ca.pem", "sslrootcert needs TLS: a rediss:// URL"],
    [
      "rediss://h:1?sslmode=disable",
      "the parameter sslmode is not supported (supported: sslrootcert, sslcert, sslkey)"
    ],
    ["rediss://h:1?sslkey=/c.key", "sslcert and sslkey go together: set both or neither"],
    [
      "rediss://a:1?sslrootcert=/ca.pem,rediss://b:1",
      "the seed nodes differ in scheme or parameters: give each the same (redis:// or rediss://, and the same ?…)"
    ],
    ["redis://:secret@[bad:1", "the first URL cannot be read as a URL"]
  ])("%s: refused, saying why", (setting, message) => {
    expect(parseRedisUrl(setting)).toEqual(Result.fail(message))
  })
})
