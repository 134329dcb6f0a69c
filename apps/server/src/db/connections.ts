import net from "node:net"
import { Duplex } from "node:stream"
import tls from "node:tls"
import { type CloseReason, type Sessions, watchAnswers } from "./answerWatch.ts"
import type { ConnectionSettings } from "./connectionSettings.ts"
import { afterPendingWrites, type PostgresSocketOptions } from "./postgresInternals.ts"

/**
 * How the server's connections to PostgreSQL are made: the socket factory
 * postgres.js calls for each connection. It does what libpq does and
 * postgres.js does not: `sslmode` with `sslrootcert`, `sslcert` and `sslkey`,
 * and (for `prefer`) a plain connection when the server has no TLS. And every
 * connection it makes is watched for answers that do not come (`answerWatch.ts`).
 */

/** An error with a code, as postgres.js and Node's sockets give them, so that `isUnavailable` reads it the same way. */
export class ConnectionFailure extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** The TLS handshake failed or was refused: the start-up line says which. */
export const describeTlsFailure = (cause: unknown): string | undefined => {
  const code = (cause as { code?: unknown } | undefined)?.code
  const message = cause instanceof Error ? cause.message : String(cause)
  if (code === "TLS_REFUSED") return message
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `TLS: the server's certificate does not name this host (${message})`
  }
  if (
    typeof code === "string" &&
    /^(UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|CERT_|ERR_TLS|ERR_SSL|EPROTO)/.test(code)
  ) return `TLS: the server's certificate is not trusted (${code}: ${message})`
  return undefined
}

const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])

export interface SocketOptions {
  readonly settings: ConnectionSettings
  /** A connection owing an answer and silent this long is closed; 0: never (migrations, which may wait on locks). */
  readonly silenceMillis: number
  /** TCP, the TLS request and handshake here, then the start-up message's answer through the watch. */
  readonly connectTimeoutMillis: number
  readonly onClose: (reason: CloseReason) => void
  /** Where each watched connection is filed by its session's key. */
  readonly sessions?: Sessions
}

/**
 * A stand-in socket that fails (error, then close) once postgres.js has
 * listened to it and written its start-up message: its usual path for a failed
 * connection. Not before that write: postgres.js defers writes to an immediate
 * and, when the socket closes first, keeps the cancelled immediate's handle, so
 * that its next connection never sends its start-up message (and times out).
 */
const failedSocket = (error: unknown) => {
  const socket = new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() })
  afterPendingWrites(() => {
    socket.emit("error", error instanceof Error ? error : new Error(String(error)))
    socket.emit("close", true)
  })
  return socket
}

/**
 * The socket's next `event`, or a failure when it errors or closes first. A connection cut while it starts (a
 * proxy or a host that goes away between the TLS request and its answer) closes with no error at all: a plain
 * `once(socket, "data")` would wait on it forever, and the pool would have lost that connection for good.
 */
const nextEvent = (socket: net.Socket, event: string): Promise<Array<unknown>> =>
  new Promise((resolve, reject) => {
    const closedWhileStarting = () =>
      new ConnectionFailure("CONNECTION_CLOSED", "the connection closed while it was starting")
    if (socket.destroyed) return reject(closedWhileStarting())
    const stopListening = () => socket.off(event, onEvent).off("error", onError).off("close", onClose)
    const onEvent = (...args: Array<unknown>) => {
      stopListening()
      resolve(args)
    }
    const onError = (error: Error) => {
      stopListening()
      reject(error)
    }
    const onClose = () => {
      stopListening()
      reject(closedWhileStarting())
    }
    socket.on(event, onEvent).on("error", onError).on("close", onClose)
  })

/**
 * Connecting (TCP, TLS request, handshake) within `millis`, else the socket is closed and counted as silent. The
 * timeout settles the start itself: destroying a socket that has already closed emits nothing.
 */
const withTimeout = async <A>(options: SocketOptions, socket: net.Socket, work: Promise<A>): Promise<A> => {
  const millis = options.connectTimeoutMillis
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      options.onClose("silent")
      const failure = new ConnectionFailure("CONNECT_TIMEOUT", `no answer within ${millis / 1000} s`)
      socket.destroy(failure)
      reject(failure)
    }, millis)
  })
  // Whichever loses the race settles later, unheard.
  work.catch(() => {})
  try {
    return await Promise.race([work, timedOut])
  } finally {
    clearTimeout(timer)
  }
}

const open = async (options: SocketOptions, host: string, port: number, path: string | undefined): Promise<Duplex> => {
  const { settings } = options
  const raw = path === undefined ? net.connect({ host, port }) : net.connect({ path })
  return withTimeout(
    options,
    raw,
    (async () => {
      await nextEvent(raw, "connect")
      if (settings.sslMode === "disable") return raw
      raw.write(SSL_REQUEST)
      const [answer] = (await nextEvent(raw, "data")) as [Buffer]
      if (answer[0] !== 0x53) {
        if (settings.sslMode === "prefer") return raw
        raw.destroy()
        throw new ConnectionFailure(
          "TLS_REFUSED",
          `TLS refused: the server does not accept TLS, and sslmode=${settings.sslMode} requires it`
        )
      }
      // libpq: `require` with a root certificate given verifies the chain, as `verify-ca` does.
      const verify = settings.sslMode === "verify-full" || settings.sslMode === "verify-ca" ||
        (settings.sslMode === "require" && settings.tls.ca !== undefined)
      const secure = tls.connect({
        socket: raw,
        // The name the certificate must carry (verify-full): without it Node would check for "localhost".
        host,
        ...(net.isIP(host) ? {} : { servername: host }),
        ...settings.tls,
        rejectUnauthorized: verify,
        ...(settings.sslMode === "verify-full" ? {} : { checkServerIdentity: () => undefined })
      })
      await nextEvent(secure, "secureConnect")
      return secure
    })()
  )
}

/**
 * The `socket` option of postgres.js (`postgresInternals.ts`). With several hosts (`h1:5432,h2:5432`)
 * each connection tries them in turn from the next one on, as libpq does; a
 * host that is not what `target_session_attrs` asks for is left by
 * postgres.js, and its next connection starts at the next host.
 */
export const socketFactory = (options: SocketOptions) => {
  let next = 0
  return async (postgresOptions: PostgresSocketOptions): Promise<Duplex> => {
    const { host: hosts, port: ports } = postgresOptions
    const path = typeof postgresOptions.path === "string" && postgresOptions.path !== ""
      ? postgresOptions.path
      : undefined
    const count = path === undefined ? hosts.length : 1
    const first = next++
    let lastError: unknown
    for (let tried = 0; tried < count; tried++) {
      const index = (first + tried) % count
      try {
        const socket = await open(options, hosts[index]!, ports[index] ?? ports[0]!, path)
        return options.silenceMillis > 0
          ? watchAnswers(socket, options.silenceMillis, options.onClose, options.sessions, options.connectTimeoutMillis)
          : socket
      } catch (error) {
        lastError = error
      }
    }
    return failedSocket(lastError)
  }
}
