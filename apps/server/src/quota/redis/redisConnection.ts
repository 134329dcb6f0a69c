import { Effect } from "effect"
import { createClient, createCluster, ErrorReply } from "redis"
import { describeTlsFailure } from "../../db/connections.ts"
import { readPem } from "../../db/connectionSettings.ts"
import type { RedisUrl } from "../../net/redisUrl.ts"
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
  /** One server, or a Cluster's seed nodes: REDIS_URL as the configuration read it. */
  readonly url: RedisUrl
}

/** A reply that means the server is there but cannot serve the key now: an outage, as a lost socket is. */
const UNAVAILABLE_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|LOADING|READONLY|MASTERDOWN|BUSY|MOVED|ASK)\b/

/**
 * Whether a failure means Redis could not be reached or could not serve (worth a 503, or the fallback store),
 * rather than refusing the command (a bug: a wrong type under the key, a broken script).
 */
export const isRedisUnavailable = (cause: unknown): boolean =>
  !(cause instanceof ErrorReply) || UNAVAILABLE_REPLIES.test(cause.message)

/** Where the URLs point, without credentials or parameters: `host:port` each. */
export const redisTarget = (urls: ReadonlyArray<string>) =>
  urls.map((url) => url.replace(/^[a-z]+:\/\/(?:[^@/]*@)?/i, "").replace(/[/?].*$/, "")).join(",")

/** What the client is given: the URLs (no parameters) and the seed's credentials, and TLS or not. */
export interface RedisEndpoints extends Pick<RedisUrl, "urls" | "username" | "password"> {
  /**
   * Undefined for `redis://`. For `rediss://`: the CAs to trust (none: the system's), and a client certificate.
   * The chain and the host name are always verified, as DATABASE_URL's `sslmode=verify-full` does.
   */
  readonly tls: { readonly ca?: string; readonly cert?: string; readonly key?: string } | undefined
}

/** REDIS_URL with the files its parameters name read; throws a `StartupError` naming the variable, the parameter and the file. */
export const redisEndpoints = (url: RedisUrl): RedisEndpoints => {
  const file = (parameter: string, path: string | undefined) =>
    path === undefined ? undefined : readPem("REDIS_URL", parameter, path)
  const tls = url.tls
  const { password, urls, username } = url
  if (tls === undefined) return { urls, username, password, tls: undefined }
  const [ca, cert, key] = [
    file("sslrootcert", tls.sslRootCert),
    file("sslcert", tls.sslCert),
    file("sslkey", tls.sslKey)
  ]
  return {
    urls,
    username,
    password,
    tls: { ...(ca === undefined ? {} : { ca }), ...(cert === undefined || key === undefined ? {} : { cert, key }) }
  }
}

/** Redis's TLS alerts about this client's certificate (Redis asks for one by default: `tls-auth-clients yes`). */
const CLIENT_CERTIFICATE_ALERT =
  /^ERR_SSL_(?:TLSV1\d*|SSLV3)_ALERT_(?:CERTIFICATE_REQUIRED|UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN)$/

/**
 * A reset of a TLS connection made without a client certificate: under TLS 1.3 the server checks the client's
 * certificate after the client has finished its handshake, so its refusal (the alert) can be lost to a reset of
 * the connection the client is already writing on.
 */
const refusedWithoutCertificate = (tls: { readonly cert?: string } | undefined, code: string | undefined) =>
  tls !== undefined && tls.cert === undefined && (code === "ECONNRESET" || code === "EPIPE")

/** Why the first connection failed, on one line for the start-up's (OpenSSL's messages span lines). */
const describeConnectFailure = (cause: unknown, tls: { readonly cert?: string } | undefined) => {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  const why = typeof code === "string" && (CLIENT_CERTIFICATE_ALERT.test(code) || refusedWithoutCertificate(tls, code))
    ? `TLS: Redis refused this client's certificate, or wants one (sslcert, sslkey) (${code})`
    : describeTlsFailure(cause) ??
      `cannot reach Redis: ${
        code === "ECONNREFUSED"
          ? "connection refused: is Redis running there?"
          : String((cause as Error).message ?? cause)
      }`
  return why.replace(/\s*\n\s*/g, " ").trim()
}

const CONNECT_TIMEOUT_MILLIS = 5_000

/**
 * The whole first connection, handshake included: the connect timeout covers only the socket, and the client
 * then waits for its handshake's answer (`HELLO`) without a deadline, so a server that accepts and never answers
 * (not Redis, or Redis wedged) would hold the start-up for ever. Generous: a Cluster's first connection reaches
 * every primary, on a machine that may be busy.
 */
export const FIRST_CONNECTION_DEADLINE_SECONDS = 15

/**
 * Connects (failing at once when Redis cannot be reached: a start-up names it), then reconnects by itself
 * in the background, quickly (50 ms, growing to 1 s between tries). Commands sent while a connection is down
 * fail at once rather than queue: a request must not wait for Redis longer than QUOTA_STORE_TIMEOUT.
 *
 * Connecting can be interrupted (the client is destroyed): the start-up connects while the database opens,
 * and a database that cannot be opened stops it without waiting for Redis's connect timeout. The first
 * connection has a deadline of its own (`FIRST_CONNECTION_DEADLINE_SECONDS`).
 */
export const connectRedis = (target: RedisTarget) =>
  Effect.acquireRelease(
    Effect.try({ try: () => redisEndpoints(target.url), catch: (cause) => cause as StartupError }).pipe(
      Effect.flatMap((endpoints) =>
        Effect.tryPromise({
          try: (signal) => open(target.type, endpoints, signal),
          catch: (cause) =>
            new StartupError({
              message: `REDIS_URL (${redisTarget(endpoints.urls)}): ${describeConnectFailure(cause, endpoints.tls)}`
            })
        }).pipe(
          // Interrupting the connect destroys the client (`destroyOnAbort`), so nothing is left connecting.
          Effect.timeoutOrElse({
            duration: `${FIRST_CONNECTION_DEADLINE_SECONDS} seconds`,
            orElse: () =>
              Effect.fail(
                new StartupError({
                  message: `REDIS_URL (${redisTarget(endpoints.urls)}): connected, but no answer to the handshake ` +
                    `within ${FIRST_CONNECTION_DEADLINE_SECONDS} s: is a Redis server listening there?`
                })
              )
          })
        )
      )
    ),
    (connection) => Effect.promise(() => connection.close().catch(() => undefined)),
    { interruptible: true }
  )

/**
 * An interrupted connect leaves nothing behind: the client is destroyed, whether it is still connecting or has
 * just connected (its connection then never reached the scope that would have closed it).
 */
const destroyOnAbort = (signal: AbortSignal, destroy: () => void) =>
  signal.addEventListener("abort", () => {
    try {
      destroy()
    } catch {
      // Already closed: nothing left to release.
    }
  }, { once: true })

const open = async (
  type: RedisTarget["type"],
  endpoints: RedisEndpoints,
  signal: AbortSignal
): Promise<RedisConnection & { readonly close: () => Promise<void> }> => {
  let connected = false
  // Host names are checked as Node does (the URL's host against the certificate's names): never skipped.
  const socket = () => ({
    connectTimeout: CONNECT_TIMEOUT_MILLIS,
    // Before the first connection a failure is final: the start-up reports it instead of retrying forever.
    reconnectStrategy: (retries: number, cause: Error) => connected ? Math.min(50 * 2 ** retries, 1_000) : cause,
    ...(endpoints.tls === undefined ? {} : { tls: true as const, ...endpoints.tls })
  })
  // Errors are answered per command; the client also emits each one, and an unheard emitter would crash the process.
  // The last one before the first connection is why it failed: the client's own error only says that it gave up
  // (a Cluster's, that no seed answered), without the socket's error code that names a TLS failure.
  let lastError: unknown
  const remember = (error: unknown) => {
    if (!connected) lastError = error
  }
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
  if (type === "single") {
    const client = createClient({ url: endpoints.urls[0]!, disableOfflineQueue: true, socket: socket() })
    client.on("error", remember)
    destroyOnAbort(signal, () => client.destroy())
    try {
      await client.connect()
    } catch (error) {
      throw lastError ?? error
    }
    connected = true
    return {
      runScript: (script, key, args) => evaluate((command) => client.sendCommand(command), script, key, args),
      ping: async () => void (await client.ping()),
      close: () => client.close()
    }
  }
  const cluster = createCluster({
    // A socket object each: the client writes each URL's host and port into the one it is given.
    rootNodes: endpoints.urls.map((url) => ({ url, socket: socket() })),
    // Credentials and TLS apply to every node the Cluster names, not only to the seeds.
    defaults: {
      ...(endpoints.username === undefined ? {} : { username: endpoints.username }),
      ...(endpoints.password === undefined ? {} : { password: endpoints.password }),
      disableOfflineQueue: true,
      socket: socket()
    },
    // A primary that stopped answering is looked up again after 1 s of trying it: its replica may have taken over.
    topologyRefreshOnReconnectionAttemptStrategy: 1_000
  })
  cluster.on("error", remember)
  destroyOnAbort(signal, () => cluster.destroy())
  try {
    await cluster.connect()
  } catch (error) {
    throw lastError ?? error
  }
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
