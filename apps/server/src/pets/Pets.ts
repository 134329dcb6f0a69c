import type { NewPet, Pet, PetPatch, PetStatus } from "@petstore/contract"
import { Context, Effect, Exit, Layer, Option, Request, RequestResolver } from "effect"
import { answerTogetherOrEach } from "../db/batch.ts"
import { Database } from "../db/Database.ts"
import { DatabaseError, errorCode } from "../db/DatabaseError.ts"
import { arrayLiteral, sql, type Statement } from "../db/sql.ts"
import { traced } from "../observability/spans.ts"
import { PetMissing, PetUnderOpenOrder, PetVersionStale } from "./PetRefusals.ts"

export interface PetPage {
  readonly pets: ReadonlyArray<Pet>
  /** The id to continue after, when more pets follow this page. */
  readonly nextAfter: Option.Option<number>
}

export interface PageQuery {
  readonly limit: number
  readonly status: PetStatus | undefined
  readonly after: number
}

/** A row of the pets table as its statements return it (`RETURNING id, name, category_id, status`). */
export interface PetRow {
  readonly id: number
  readonly name: string
  readonly category_id: number
  readonly status: PetStatus
}

export const toPet = (row: PetRow): Pet => ({
  id: row.id,
  name: row.name,
  categoryId: row.category_id,
  status: row.status
})

/** A row with its version, as the statements that answer with an `ETag` return it (`RETURNING …, version`). */
export interface VersionedPetRow extends PetRow {
  readonly version: number
}

/** A pet and its version: every change of any of its fields (its status included) gives it a new one. */
export interface StoredPet {
  readonly pet: Pet
  readonly version: number
}

export const toStoredPet = (row: VersionedPetRow): StoredPet => ({ pet: toPet(row), version: row.version })

/**
 * What `If-Match` asks for: any current version (`*`, or no header at all),
 * or one of these versions of this pet.
 */
export type PetPrecondition = { readonly _tag: "Any" } | {
  readonly _tag: "Versions"
  readonly versions: ReadonlyArray<number>
}

/** Why a change was not made: no such pet, or it is no longer the version If-Match named. */
export type PetChangeRefusal = PetMissing | PetVersionStale

const anyVersion = (precondition: PetPrecondition) => precondition._tag === "Any"
const versionsOf = (precondition: PetPrecondition) => precondition._tag === "Any" ? [] : precondition.versions

interface ListPets extends Request.Request<PetPage, DatabaseError> {
  readonly query: PageQuery
}
interface CreatePet extends Request.Request<StoredPet, DatabaseError> {
  readonly pet: NewPet
}
interface GetPet extends Request.Request<StoredPet, PetMissing | DatabaseError> {
  readonly id: number
}
const ListPets = Request.of<ListPets>()
const CreatePet = Request.of<CreatePet>()
const GetPet = Request.of<GetPet>()

/**
 * The insert of a create with an Idempotency-Key, as `IdempotencyKeys.completeWith` runs it in one statement with
 * the key's completion: one row of the insert `create` makes, if the claim is still held.
 */
export const createUnderClaim = (pet: NewPet): Statement =>
  sql`created AS (
            INSERT INTO pets (name, category_id, status)
            SELECT ${pet.name}, ${pet.categoryId}, ${pet.status} FROM claim_held
            RETURNING id, name, category_id, status, version
          )`

/**
 * The pets table: all of its SQL is here (a create with an Idempotency-Key
 * runs `createUnderClaim` in the key's statement). Concurrent requests' queries are collected and sent together, one statement
 * per kind, so the round trip is shared; each request still gets exactly what
 * its own query would return.
 */
export class Pets extends Context.Service<Pets, {
  readonly list: (query: PageQuery) => Effect.Effect<PetPage, DatabaseError>
  readonly create: (pet: NewPet) => Effect.Effect<StoredPet, DatabaseError>
  readonly get: (id: number) => Effect.Effect<StoredPet, PetMissing | DatabaseError>
  /** Changes the fields the patch names, if the precondition holds; a patch that changes nothing keeps the version. */
  readonly update: (
    id: number,
    patch: PetPatch,
    precondition: PetPrecondition
  ) => Effect.Effect<StoredPet, PetChangeRefusal | DatabaseError>
  /**
   * Deletes the pet if the precondition holds. `PetUnderOpenOrder` when an order
   * of it is open: the schema refuses it (`orders.open_pet_id` references the pet).
   */
  readonly remove: (
    id: number,
    precondition: PetPrecondition
  ) => Effect.Effect<void, PetChangeRefusal | PetUnderOpenOrder | DatabaseError>
}>()("@petstore/server/pets/Pets") {
  static readonly layer = Layer.effect(
    Pets,
    Effect.gen(function*() {
      const db = yield* Database

      // One page per distinct query of the batch, in id order; requests asking the same share it (same
      // statement, same snapshot). A row more than asked tells whether another page follows. All statuses
      // walk the primary key; one status walks the (status, id) index from (status, after) to the status's
      // end, so a rare status costs what a common one does (one branch runs per query, the other is skipped
      // by its condition). It is written as a row comparison and a bound, `status = q.status AND id > q.after`
      // in effect, because with an equality the planner takes the status as a constant, finds the primary
      // key ordered too, and walks it, throwing away every row of another status (bench --growth).
      const listTogether = RequestResolver.make<ListPets>((entries) =>
        answerTogetherOrEach(entries, (entries) => {
          const keyOf = (q: PageQuery) => `${q.limit} ${q.status ?? ""} ${q.after}`
          const distinct = new Map<string, PageQuery>()
          for (const entry of entries) distinct.set(keyOf(entry.request.query), entry.request.query)
          const queries = [...distinct.values()]
          return db.query<PetRow & { readonly ordinal: number }>(sql`
          SELECT q.ordinal::integer AS ordinal, p.id, p.name, p.category_id, p.status
          FROM unnest(${arrayLiteral(queries.map((q) => q.limit + 1))}::integer[],
                      ${arrayLiteral(queries.map((q) => q.status ?? null))}::text[],
                      ${arrayLiteral(queries.map((q) => q.after))}::bigint[])
            WITH ORDINALITY AS q(take, status, after, ordinal)
          CROSS JOIN LATERAL (
            (SELECT id, name, category_id, status FROM pets
             WHERE q.status IS NULL AND id > q.after ORDER BY id LIMIT q.take)
            UNION ALL
            (SELECT id, name, category_id, status FROM pets
             WHERE q.status IS NOT NULL AND (pets.status, pets.id) > (q.status, q.after) AND pets.status <= q.status
             ORDER BY pets.status, pets.id LIMIT q.take)
          ) AS p
          ORDER BY q.ordinal, p.id`).pipe(
            Effect.map((rows) => {
              const rowsOf = queries.map(() => [] as Array<PetRow>)
              for (const row of rows) rowsOf[row.ordinal - 1]!.push(row)
              const pages = new Map(queries.map((query, index) => {
                const shown = rowsOf[index]!.slice(0, query.limit)
                const page: PetPage = {
                  pets: shown.map(toPet),
                  nextAfter: rowsOf[index]!.length > query.limit ? Option.some(shown.at(-1)!.id) : Option.none()
                }
                return [keyOf(query), page] as const
              }))
              for (const entry of entries) entry.completeUnsafe(Exit.succeed(pages.get(keyOf(entry.request.query))!))
            })
          )
        })
      )

      // Identities are drawn in the order the rows are inserted, so the new ids, sorted, follow the batch's order.
      const createTogether = RequestResolver.make<CreatePet>((entries) =>
        answerTogetherOrEach(entries, (entries) => {
          const pets = entries.map((entry) => entry.request.pet)
          return db.query<VersionedPetRow>(sql`
          INSERT INTO pets (name, category_id, status)
          SELECT name, category_id, status
          FROM unnest(${arrayLiteral(pets.map((p) => p.name))}::text[],
                      ${arrayLiteral(pets.map((p) => p.categoryId))}::bigint[],
                      ${arrayLiteral(pets.map((p) => p.status))}::text[])
            WITH ORDINALITY AS input(name, category_id, status, ordinal)
          ORDER BY ordinal
          RETURNING id, name, category_id, status, version`).pipe(
            Effect.map((rows) => {
              const inOrder = [...rows].sort((a, b) => a.id - b.id)
              entries.forEach((entry, index) => entry.completeUnsafe(Exit.succeed(toStoredPet(inOrder[index]!))))
            })
          )
        })
      )

      const getTogether = RequestResolver.make<GetPet>((entries) =>
        answerTogetherOrEach(entries, (entries) =>
          db.query<VersionedPetRow>(sql`
          SELECT id, name, category_id, status, version FROM pets
          WHERE id = ANY(${arrayLiteral(entries.map((entry) => entry.request.id))}::bigint[])`).pipe(
            Effect.map((rows) => {
              const byId = new Map(rows.map((row) => [row.id, row]))
              for (const entry of entries) {
                const row = byId.get(entry.request.id)
                entry.completeUnsafe(
                  row === undefined
                    ? Exit.fail(new PetMissing({ petId: entry.request.id }))
                    : Exit.succeed(toStoredPet(row))
                )
              }
            })
          ))
      )

      const batchSize = RequestResolver.batchN(200)
      const [list, create, get] = [batchSize(listTogether), batchSize(createTogether), batchSize(getTogether)]

      /** After a change matched no row: the pet is gone, or it is there in another version. */
      const refusalOf = (id: number) =>
        db.query(sql`SELECT 1 FROM pets WHERE id = ${id}::bigint`).pipe(
          Effect.flatMap((rows) =>
            Effect.fail<PetChangeRefusal>(
              rows.length === 0 ? new PetMissing({ petId: id }) : new PetVersionStale({ petId: id })
            )
          )
        )

      const update = Effect.fnUntraced(function*(id: number, patch: PetPatch, precondition: PetPrecondition) {
        const [row] = yield* db.query<VersionedPetRow>(sql`
          UPDATE pets SET
            name = COALESCE(${patch.name ?? null}::text, name),
            category_id = COALESCE(${patch.categoryId ?? null}::bigint, category_id),
            version = version + CASE
              WHEN (COALESCE(${patch.name ?? null}::text, name), COALESCE(${
          patch.categoryId ?? null
        }::bigint, category_id))
                IS DISTINCT FROM (name, category_id) THEN 1 ELSE 0 END
          WHERE id = ${id}::bigint
            AND (${anyVersion(precondition)}::boolean OR version = ANY(${
          arrayLiteral(versionsOf(precondition))
        }::integer[]))
          RETURNING id, name, category_id, status, version`)
        return row === undefined ? yield* refusalOf(id) : toStoredPet(row)
      }, traced("Pets.update"))

      const remove = Effect.fnUntraced(function*(id: number, precondition: PetPrecondition) {
        const rows = yield* db.query(sql`
          DELETE FROM pets
          WHERE id = ${id}::bigint
            AND (${anyVersion(precondition)}::boolean OR version = ANY(${
          arrayLiteral(versionsOf(precondition))
        }::integer[]))
          RETURNING id`).pipe(
          // 23503: an open order refers to the pet (orders.open_pet_id).
          Effect.catchIf(
            (error): error is DatabaseError => error instanceof DatabaseError && errorCode(error.cause) === "23503",
            () => Effect.fail(new PetUnderOpenOrder({ petId: id }))
          )
        )
        if (rows.length === 0) return yield* refusalOf(id)
      }, traced("Pets.remove"))

      return Pets.of({
        list: (query) => Effect.request(ListPets({ query }), list),
        create: (pet) => Effect.request(CreatePet({ pet }), create),
        get: (id) => Effect.request(GetPet({ id }), get),
        update,
        remove
      })
    })
  )
}
