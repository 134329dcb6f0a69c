/** Idempotency-Key claims on POST /v1/pets, scoped to the API key, kept 24 hours. */
export default {
  version: 5,
  name: "create_idempotency_keys",
  statements: [
    `CREATE TABLE idempotency_keys (
      api_key_id text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      claim_token uuid NOT NULL,
      pet_id bigint,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (api_key_id, key)
    )`,
    `CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`
  ]
}
