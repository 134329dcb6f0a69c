/**
 * Pets change (PATCH, DELETE, orders): each row carries a version, shown as
 * the pet's ETag and compared with If-Match; every change of a pet's fields
 * bumps it. A deleted pet takes its Idempotency-Key records with it, so a
 * retry of its create is not left waiting on a pet that is gone.
 */
export default {
  version: 8,
  name: "pet_versions",
  statements: [
    `ALTER TABLE pets ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1)`,
    `ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pet_id_fkey
       FOREIGN KEY (pet_id) REFERENCES pets (id) ON DELETE CASCADE`
  ]
}
