import postgres from "postgres"
import { bearer, send } from "./http.ts"

/**
 * The invariants of issue 13 (README "Orders"), checked two ways: through the
 * API, as a staff key sees every pet and every order, and in the database
 * itself. Each returns the violations it found, as sentences; none is good.
 *
 * 1. No pet has more than one open (`placed`) order.
 * 2. Every open order's pet exists and is `pending`.
 * 3. A pet that has orders has the status its latest order gives it
 *    (placed: pending, delivered: sold, cancelled: available): a pending pet
 *    moved there by an order has exactly one open order, and no other pet has one.
 */
interface PetView {
  readonly id: number
  readonly status: string
}
interface OrderView {
  readonly id: number
  readonly petId: number
  readonly status: string
}

const statusAfter: Record<string, string> = { placed: "pending", delivered: "sold", cancelled: "available" }

const everyPage = async <A>(firstUrl: string, key: string): Promise<Array<A>> => {
  const all: Array<A> = []
  let next: string | undefined = firstUrl
  while (next !== undefined) {
    const page = await send(next, { headers: bearer(key) })
    if (page.status !== 200) throw new Error(`${next}: ${page.status} ${page.text}`)
    all.push(...(page.body as Array<A>))
    next = /<([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1]
  }
  return all
}

export const violationsOf = (pets: ReadonlyArray<PetView>, orders: ReadonlyArray<OrderView>): Array<string> => {
  const violations: Array<string> = []
  const petById = new Map(pets.map((pet) => [pet.id, pet]))
  const openByPet = new Map<number, number>()
  const latestByPet = new Map<number, OrderView>()
  for (const order of orders) {
    if (order.status === "placed") {
      openByPet.set(order.petId, (openByPet.get(order.petId) ?? 0) + 1)
      const pet = petById.get(order.petId)
      if (pet === undefined) violations.push(`open order ${order.id} refers to pet ${order.petId}, which is gone`)
      else if (pet.status !== "pending") violations.push(`open order ${order.id}'s pet ${pet.id} is ${pet.status}`)
    }
    const latest = latestByPet.get(order.petId)
    if (latest === undefined || latest.id < order.id) latestByPet.set(order.petId, order)
  }
  for (const [petId, count] of openByPet) if (count > 1) violations.push(`pet ${petId} has ${count} open orders`)
  for (const [petId, latest] of latestByPet) {
    const pet = petById.get(petId)
    if (pet !== undefined && pet.status !== statusAfter[latest.status]) {
      violations.push(`pet ${petId} is ${pet.status}, but its latest order ${latest.id} is ${latest.status}`)
    }
  }
  return violations
}

/** The invariants as the API shows them to a staff key. */
export const apiViolations = async (baseUrl: string, staffKey: string) =>
  violationsOf(
    await everyPage<PetView>(`${baseUrl}/pets?limit=100`, staffKey),
    await everyPage<OrderView>(`${baseUrl}/store/orders?limit=100`, staffKey)
  )

/** The invariant query: the same, in one statement against the database, with what each violation is. */
export const INVARIANT_QUERY = `
  SELECT 'pet ' || open_pet_id || ' has ' || count(*) || ' open orders' AS violation
    FROM orders WHERE open_pet_id IS NOT NULL GROUP BY open_pet_id HAVING count(*) > 1
  UNION ALL
  SELECT 'open order ' || o.id || ' has pet ' || o.pet_id || ' ' || COALESCE(p.status, 'deleted')
    FROM orders o LEFT JOIN pets p ON p.id = o.pet_id
    WHERE o.status = 'placed' AND (p.id IS NULL OR p.status <> 'pending' OR o.open_pet_id IS DISTINCT FROM o.pet_id)
  UNION ALL
  SELECT 'pet ' || p.id || ' is ' || p.status || ' but its latest order ' || o.id || ' is ' || o.status
    FROM pets p
    JOIN LATERAL (SELECT id, status FROM orders WHERE pet_id = p.id ORDER BY id DESC LIMIT 1) o ON true
    WHERE p.status <> CASE o.status WHEN 'placed' THEN 'pending' WHEN 'delivered' THEN 'sold' ELSE 'available' END
  UNION ALL
  SELECT 'order ' || id || ' is ' || status || ' with open_pet_id ' || COALESCE(open_pet_id::text, 'NULL')
    FROM orders WHERE (status = 'placed') <> (open_pet_id IS NOT NULL)`

export const sqlViolations = async (databaseUrl: string): Promise<Array<string>> => {
  const db = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await db.unsafe<Array<{ violation: string }>>(INVARIANT_QUERY)
    return rows.map((row) => row.violation)
  } finally {
    await db.end()
  }
}
