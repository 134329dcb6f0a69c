import { errorBodyOf, ServiceUnavailable } from "@petstore/contract"
import { Context, Effect, Option } from "effect"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AppConfigValues } from "./config.ts"
import { traced } from "./observability/spans.ts"
import { StartupError } from "./startupError.ts"

/**
 * The addresses the server listens on, bound and held at start-up before anything slow (`holdListeners`), and
 * what a start-up that cannot bind one says. `server.ts` listens on them once the routes are ready.
 */

/** An address the configuration asks the server to listen on, and the variables that name it. */
export interface Listener {
  readonly host: string
  readonly port: number
  readonly hostVariable: "HOST" | "ADMIN_HOST"
  readonly portVariable: "PORT" | "ADMIN_PORT"
}

export const listenersOf = (config: AppConfigValues) => {
  const listeners: Array<Listener> = [{
    host: config.host,
    port: config.port,
    hostVariable: "HOST",
    portVariable: "PORT"
  }]
  if (Option.isSome(config.adminToken) || config.metricsPublic) {
    listeners.push({
      host: config.adminHost,
      port: config.adminPort,
      hostVariable: "ADMIN_HOST",
      portVariable: "ADMIN_PORT"
    })
  }
  return listeners
}

export const cannotListen = (listener: Listener, cause: unknown) => {
  const code = (cause as { code?: unknown } | undefined)?.code
  const at = `${listener.host}:${listener.port}`
  switch (code) {
    case "EADDRINUSE":
      return new StartupError({ message: `${listener.portVariable}: ${at} is already in use` })
    case "EACCES":
      return new StartupError({
        message: `${listener.portVariable}: no permission to listen on ${at} (below 1024 needs privileges)`
      })
    case "EADDRNOTAVAIL":
      return new StartupError({
        message: `${listener.hostVariable}: ${listener.host} is not an address of this machine`
      })
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError({ message: `${listener.hostVariable}: ${listener.host} is not a known host` })
    default:
      return new StartupError({
        message: `${listener.portVariable}: cannot listen on ${at}: ${
          cause instanceof Error ? cause.message : String(cause)
        }`
      })
  }
}

const stillStarting = errorBodyOf(new ServiceUnavailable({ message: "The server is starting; retry shortly" }))

/** What a request gets before the routes answer: 503, and a connection closed so the retry finds them. */
export const answerStarting = (_request: IncomingMessage, response: ServerResponse) => {
  const requestId = randomUUID()
  response.writeHead(503, {
    "content-type": "application/json",
    "retry-after": "1",
    "x-request-id": requestId,
    connection: "close"
  }).end(JSON.stringify({ ...stillStarting, requestId }))
}

/**
 * Addresses the process bound at start-up, before anything slow, and holds until its listeners take them over.
 * Keyed by `host:port` as configured.
 */
export class HeldAddresses extends Context.Service<HeldAddresses, {
  /** The held socket of this address, if any; from then on it is the caller's to listen on. */
  readonly takeOver: (host: string, port: number) => Server | undefined
}>()("@petstore/server/HeldAddresses") {}

/**
 * Binds the listener's address and answers whoever connects 503 "starting" until the real listener takes the
 * same socket over (`server.listen(heldServer)`, Node's documented hand-over of a listening handle), or until
 * the scope closes. The socket is never closed between the check and the listener: closing a listening socket
 * resets the connections the kernel has queued on it, which a loaded event loop has not accepted yet.
 */
const holdAddress = (listener: Listener, handedOver: Set<Server>) =>
  Effect.acquireRelease(
    Effect.callback<Server, StartupError>((resume) => {
      const probe = createServer(answerStarting)
      probe.once("error", (cause) => resume(Effect.fail(cannotListen(listener, cause))))
      probe.listen({ host: listener.host, port: listener.port, exclusive: true }, () => resume(Effect.succeed(probe)))
    }),
    (probe) =>
      Effect.callback<void>((resume) => {
        // A socket handed over belongs to the listener now; only its answered connections are the probe's.
        if (handedOver.has(probe)) return resume(Effect.void)
        probe.close(() => resume(Effect.void))
        // Answered connections close themselves; one that never sent its request is cut after a second.
        setTimeout(() => probe.closeAllConnections(), 1_000).unref()
      })
  )

/**
 * Fails when an address the server must listen on cannot be bound, before anything slow starts (PGlite takes
 * seconds to open). The addresses are bound together, so that PORT and ADMIN_PORT cannot be the same, and held
 * for the scope: the listeners take them over once their routes are ready (`HeldAddresses`).
 */
export const holdListeners = Effect.fnUntraced(function*(config: AppConfigValues) {
  const handedOver = new Set<Server>()
  const held = new Map<string, Server>()
  for (const listener of listenersOf(config).filter((listener) => listener.port !== 0)) {
    held.set(`${listener.host}:${listener.port}`, yield* holdAddress(listener, handedOver))
  }
  return HeldAddresses.of({
    takeOver: (host, port) => {
      const probe = held.get(`${host}:${port}`)
      if (probe !== undefined) handedOver.add(probe)
      return probe
    }
  })
}, traced("checkListeners"))

/**
 * The check alone, for the primary of `WORKERS=N`: its workers listen through node:cluster, which binds sockets
 * of its own, so the primary lets the addresses go again at once.
 */
export const checkListeners = (config: AppConfigValues) => Effect.scoped(Effect.asVoid(holdListeners(config)))
