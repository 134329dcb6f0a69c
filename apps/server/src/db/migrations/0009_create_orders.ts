/**
 * Orders (README "Orders"). What the schema itself enforces:
 *
 * - `open_pet_id` is the pet of a `placed` order and NULL once it is
 *   delivered or cancelled (the two CHECKs);
 * - it is UNIQUE: a pet has at most one open order, whatever the concurrency;
 * - it REFERENCES pets: a pet with an open order cannot be deleted, and no
 *   open order refers to a deleted pet. `pet_id` keeps the pet of a closed
 *   order, which may since have been deleted, so it has no foreign key.
 *
 * That a pet with an open order is `pending` is kept by the statements that
 * move both in one (`orders/Orders.ts`: `place`, and `placeUnderClaim` under an Idempotency-Key).
 */
export default {
  version: 9,
  name: "create_orders",
  statements: [
    `CREATE TABLE orders (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      pet_id bigint NOT NULL,
      api_key_id text NOT NULL REFERENCES api_keys (id),
      status text NOT NULL CHECK (status IN ('placed', 'delivered', 'cancelled')),
      open_pet_id bigint UNIQUE REFERENCES pets (id),
      placed_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((status = 'placed') = (open_pet_id IS NOT NULL)),
      CHECK (open_pet_id IS NULL OR open_pet_id = pet_id)
    )`,
    // A customer's orders, in id order; the status filter of a staff key's list.
    `CREATE INDEX orders_api_key_id_id ON orders (api_key_id, id)`,
    `CREATE INDEX orders_status_id ON orders (status, id)`,
    // An Idempotency-Key of POST /v1/store/orders records the order it placed.
    `ALTER TABLE idempotency_keys ADD COLUMN order_id bigint REFERENCES orders (id)`,
    `ALTER TABLE idempotency_keys ADD CHECK (pet_id IS NULL OR order_id IS NULL)`
  ]
}
