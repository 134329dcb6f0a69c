import { Effect } from "effect"
import { createClient, createCluster, ErrorReply } from "redis"
import { StartupError } from "../../startupError.ts"

/** The few commands the quota store sends, the same on one server and on a Cluster. */
export interface RedisConnection {
  /** Runs a script by its SHA1 (`EVALSHA`), sending its text (`EVAL`) only when the server does not have it yet. */
  readonly runScript: (
    script: { readonly text: string; readonly sha1: string },
    key: string,
    args: ReadonlyArray<string>
  ) => Promise<unknown>
  /** Answers when every node the store needs answers. */
  readonly ping: () => Promise<void>
}

export interface RedisTarget {
  readonly type: "single" | "cluster"
  /** `redis://` or `rediss://` URLs: one server, or a Cluster's seed nodes. */
  readonly urls: ReadonlyArray<string>
}

/** A reply that means the server is there but cannot serve the key now: an outage, as a lost socket is. */
const UNAVAILABLE_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|LOADING|READONLY|MASTERDOWN|BUSY|MOVED|ASK)\b/

/**
 * Whether a failure means Redis could not be reached or could not serve (worth a 503, or the fallback store),
 * rather than refusing the command (a bug: a wrong type under the key, a broken script).
 */
export const isRedisUnavailable = (cause: unknown): boolean =>
  !(cause instanceof ErrorReply) || UNAVAILABLE_REPLIES.test(cause.message)

/** Where the URLs point, without credentials: `host:port` each. */
export const redisTarget = (urls: ReadonlyArray<string>) =>
  urls.map((url) => url.replace(/^[a-z]+:\/\/(?:[^@/]*@)?/i, "").replace(/[/?].*$/, "")).join(",")

const CONNECT_TIMEOUT_MILLIS = 5_000

/**
 * Connects (failing at once when Redis cannot be reached: a start-up names it), then reconnects by itself
 * in the background, quickly (50 ms, growing to 1 s between tries). Commands sent while a connection is down
 * fail at once rather than queue: a request must not wait for Redis longer than QUOTA_STORE_TIMEOUT.
 */
export const connectRedis = (target: RedisTarget) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => open(target),
      catch: (cause) =>
        new StartupError({
          message: `REDIS_URL (${redisTarget(target.urls)}): cannot reach Redis: ${
            (cause as NodeJS.ErrnoException).code === "ECONNREFUSED"
              ? "connection refused: is Redis running there?"
              : String((cause as Error).message ?? cause).replace(/\s*\n\s*/g, " ")
          }`
        })
    }),
    (connection) => Effect.promise(() => connection.close().catch(() => undefined))
  )

const open = async (target: RedisTarget): Promise<RedisConnection & { readonly close: () => Promise<void> }> => {
  let connected = false
  const socket = {
    connectTimeout: CONNECT_TIMEOUT_MILLIS,
    // Before the first connection a failure is final: the start-up reports it instead of retrying forever.
    reconnectStrategy: (retries: number, cause: Error) => connected ? Math.min(50 * 2 ** retries, 1_000) : cause
  }
  // Errors are answered per command; the client also emits each one, and an unheard emitter would crash the process.
  const ignore = () => {}
  const evaluate = async (
    send: (args: Array<string>) => Promise<unknown>,
    script: { readonly text: string; readonly sha1: string },
    key: string,
    args: ReadonlyArray<string>
  ) => {
    try {
      return await send(["EVALSHA", script.sha1, "1", key, ...args])
    } catch (error) {
      if (!(error instanceof ErrorReply) || !error.message.startsWith("NOSCRIPT")) throw error
      return await send(["EVAL", script.text, "1", key, ...args])
    }
  }
  if (target.type === "single") {
    const client = createClient({ url: target.urls[0]!, disableOfflineQueue: true, socket })
    client.on("error", ignore)
    await client.connect()
    connected = true
    return {
      runScript: (script, key, args) => evaluate((command) => client.sendCommand(command), script, key, args),
      ping: async () => void (await client.ping()),
      close: () => client.close()
    }
  }
  const seed = new URL(target.urls[0]!)
  const cluster = createCluster({
    rootNodes: target.urls.map((url) => ({ url, socket })),
    // Credentials and TLS apply to every node the Cluster names, not only to the seeds.
    defaults: {
      ...(seed.username === "" ? {} : { username: decodeURIComponent(seed.username) }),
      ...(seed.password === "" ? {} : { password: decodeURIComponent(seed.password) }),
      disableOfflineQueue: true,
      socket: { ...socket, ...(seed.protocol === "rediss:" ? { tls: true as const } : {}) }
    },
    // A primary that stopped answering is looked up again after 1 s of trying it: its replica may have taken over.
    topologyRefreshOnReconnectionAttemptStrategy: 1_000
  })
  cluster.on("error", ignore)
  await cluster.connect()
  connected = true
  return {
    runScript: (script, key, args) =>
      evaluate((command) => cluster.sendCommand(key, false, command), script, key, args),
    ping: async () => {
      await Promise.all(cluster.masters.map(async (node) => (await cluster.nodeClient(node)).ping()))
    },
    close: () => cluster.close()
  }
}
