import { Data } from "effect"

/** No pet has this id. */
export class PetMissing extends Data.TaggedError("PetMissing")<{ readonly petId: number }> {}

/** The pet is there, but in none of the versions `If-Match` named. */
export class PetVersionStale extends Data.TaggedError("PetVersionStale")<{ readonly petId: number }> {}

/** An open order holds the pet (`orders.open_pet_id`), so it cannot be deleted. */
export class PetUnderOpenOrder extends Data.TaggedError("PetUnderOpenOrder")<{ readonly petId: number }> {}
