/**
 * The floor the server is measured against: plain node:http and postgres.js
 * doing the straightforward version of the same work per request. The API key
 * is looked up by hash (cached for 5 s), quota is one atomic statement (the
 * same `quota_admit` function the server's PostgreSQL store calls), then the
 * query. No framework, and no validation beyond what the request needs.
 *
 * With FLOOR_PLAIN=1 it is the plain floor: the same queries with no key
 * lookup and no quota statement at all (what the issue calls the "plain
 * floor"), the bare cost of node:http and postgres.js serving the endpoint.
 * An order still belongs to a key: the plain floor's go to FLOOR_KEY_ID's.
 */
import { createHash } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import postgres from "postgres"

const sql = postgres(process.env.DATABASE_URL!, {
  max: 10,
  types: { int8: { to: 20, from: [20], serialize: String, parse: Number } }
})

interface Key {
  readonly id: string
  readonly perMinute: number
  readonly perDay: number
}
const keyCache = new Map<string, { key: Key | undefined; expiresAt: number }>()

const lookUpKey = async (authorization: string | undefined): Promise<Key | undefined> => {
  if (!authorization?.toLowerCase().startsWith("bearer ")) return undefined
  const hash = createHash("sha256").update(authorization.slice(7)).digest("hex")
  const cached = keyCache.get(hash)
  if (cached && cached.expiresAt > Date.now()) return cached.key
  const [row] = await sql<Array<{ id: string; per_minute: number; per_day: number }>>`
    SELECT id, per_minute, per_day FROM api_keys WHERE secret_hash = ${hash} AND revoked_at IS NULL`
  const key = row ? { id: row.id, perMinute: row.per_minute, perDay: row.per_day } : undefined
  keyCache.set(hash, { key, expiresAt: Date.now() + 5_000 })
  return key
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(body))
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => resolve(body))
    req.on("error", reject)
  })

const plain = process.env.FLOOR_PLAIN === "1"

/** The caller's key id, and the headers that show the quota decision (none in the plain floor). */
interface Admitted {
  readonly keyId: string
  readonly headers: Record<string, string>
}

/** The key lookup and the quota statement, and the headers that show the decision; nothing in the plain floor. */
const admit = async (req: IncomingMessage, res: ServerResponse): Promise<Admitted | undefined> => {
  if (plain) return { keyId: process.env.FLOOR_KEY_ID ?? "", headers: {} }
  const key = await lookUpKey(req.headers.authorization)
  if (!key) return void send(res, 401, { code: "unauthorized", message: "unauthorized", status: 401 })
  const [quota] = await sql<Array<{ admitted: boolean; minute_count: number; minute_start: number }>>`
    SELECT * FROM quota_admit(${`key:${key.id}`}, ${Date.now()}, ${key.perMinute}, ${key.perDay}, ${key.perMinute}, ${900_000}, true)`
  const headers = {
    "x-ratelimit-limit": String(key.perMinute),
    "x-ratelimit-remaining": String(key.perMinute - quota!.minute_count),
    "x-ratelimit-reset": String(Math.ceil(quota!.minute_start / 1000) + 60)
  }
  if (!quota!.admitted) {
    return void send(res, 429, { code: "rate_limited", message: "rate limited", status: 429 }, headers)
  }
  return { keyId: key.id, headers }
}

const handle = async (req: IncomingMessage, res: ServerResponse) => {
  const admitted = await admit(req, res)
  if (admitted === undefined) return
  const { headers, keyId } = admitted

  const url = new URL(req.url!, "http://floor")
  if (req.method === "GET" && url.pathname === "/v1/pets") {
    const limit = Number(url.searchParams.get("limit") ?? 20)
    const after = Number(url.searchParams.get("after") ?? 0)
    const rows = await sql`
      SELECT id, name, category_id AS "categoryId", status FROM pets WHERE id > ${after} ORDER BY id LIMIT ${limit + 1}`
    const page = rows.slice(0, limit)
    const next = rows.length > limit
      ? { link: `<http://${req.headers.host}/v1/pets?limit=${limit}&after=${page.at(-1)!.id}>; rel="next"` }
      : {}
    return send(res, 200, page, { ...headers, ...next })
  }
  if (req.method === "POST" && url.pathname === "/v1/pets") {
    const pet = JSON.parse(await readBody(req))
    const [row] = await sql`
      INSERT INTO pets (name, category_id, status) VALUES (${pet.name}, ${pet.categoryId}, ${pet.status ?? "available"})
      RETURNING id, name, category_id AS "categoryId", status`
    return send(res, 201, row, { ...headers, location: `/v1/pets/${row!.id}` })
  }
  if (req.method === "POST" && url.pathname === "/v1/store/orders") {
    // The pet becomes pending and the order is placed in one statement, as anyone would write it to be atomic.
    const { petId } = JSON.parse(await readBody(req)) as { petId: number }
    const [order] = await sql`
      WITH pet AS (
        UPDATE pets SET status = 'pending', version = version + 1 WHERE id = ${petId} AND status = 'available' RETURNING id
      )
      INSERT INTO orders (pet_id, open_pet_id, api_key_id, status) SELECT id, id, ${keyId}, 'placed' FROM pet
      RETURNING id, pet_id AS "petId", status, placed_at AS "placedAt", updated_at AS "updatedAt"`
    if (order) return send(res, 201, order, { ...headers, location: `/v1/store/orders/${order.id}` })
    const [pet] = await sql`SELECT status FROM pets WHERE id = ${petId}`
    return pet
      ? send(res, 409, { code: "pet_not_available", message: `Pet ${petId} is ${pet.status}`, status: 409 }, headers)
      : send(res, 404, { code: "not_found", message: "not found", status: 404 }, headers)
  }
  const match = /^\/v1\/pets\/(\d+)$/.exec(url.pathname)
  if (req.method === "GET" && match) {
    const [row] = await sql`SELECT id, name, category_id AS "categoryId", status FROM pets WHERE id = ${
      Number(match[1])
    }`
    return row
      ? send(res, 200, row, headers)
      : send(res, 404, { code: "not_found", message: "not found", status: 404 }, headers)
  }
  return send(res, 404, { code: "not_found", message: "not found", status: 404 }, headers)
}

createServer((req, res) => {
  handle(req, res).catch(() => send(res, 500, { code: "internal_error", message: "internal error", status: 500 }))
}).listen(Number(process.env.PORT), "127.0.0.1")
