import type { NewPet, PetStatus } from "@petstore/contract"
import { Pet } from "@petstore/contract"
import { Context, Effect, Layer, Option } from "effect"
import { Database, type DatabaseError, sql } from "../db/Database.ts"

export interface PetPage {
  readonly pets: ReadonlyArray<Pet>
  /** The id to continue after, when more pets follow this page. */
  readonly nextAfter: Option.Option<number>
}

interface PetRow {
  readonly id: number
  readonly name: string
  readonly category_id: number
  readonly status: PetStatus
}

const toPet = (row: PetRow) => new Pet({ id: row.id, name: row.name, categoryId: row.category_id, status: row.status })

/** The pets table: all of its SQL is here. */
export class Pets extends Context.Service<Pets, {
  readonly list: (options: {
    readonly limit: number
    readonly status: PetStatus | undefined
    readonly after: number
  }) => Effect.Effect<PetPage, DatabaseError>
  readonly create: (pet: NewPet) => Effect.Effect<Pet, DatabaseError>
  readonly get: (id: number) => Effect.Effect<Option.Option<Pet>, DatabaseError>
}>()("@petstore/server/pets/Pets") {
  static readonly layer = Layer.effect(
    Pets,
    Effect.gen(function*() {
      const db = yield* Database

      return Pets.of({
        // One row more than asked tells whether another page follows.
        list: Effect.fn("Pets.list")(function*({ limit, status, after }) {
          const rows = yield* db.query<PetRow>(sql`
            SELECT id, name, category_id, status FROM pets
            WHERE id > ${after} AND (${status ?? null}::text IS NULL OR status = ${status ?? null})
            ORDER BY id
            LIMIT ${limit + 1}`)
          const page = rows.slice(0, limit).map(toPet)
          const last = page.at(-1)
          return {
            pets: page,
            nextAfter: rows.length > limit && last ? Option.some(last.id) : Option.none()
          }
        }),
        create: Effect.fn("Pets.create")(function*(pet) {
          const [row] = yield* db.query<PetRow>(sql`
            INSERT INTO pets (name, category_id, status)
            VALUES (${pet.name}, ${pet.categoryId}, ${pet.status})
            RETURNING id, name, category_id, status`)
          return toPet(row!)
        }),
        get: Effect.fn("Pets.get")(function*(id) {
          const rows = yield* db.query<PetRow>(sql`SELECT id, name, category_id, status FROM pets WHERE id = ${id}`)
          return Option.map(Option.fromUndefinedOr(rows[0]), toPet)
        })
      })
    })
  )
}
