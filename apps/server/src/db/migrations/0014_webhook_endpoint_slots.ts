/**
 * A key's endpoints are bounded by the schema itself: each takes one of the
 * key's slots, 1 to 10, unique per key. A count in the insert's statement
 * would not hold under concurrency (two creates see the same count); two that
 * take the same slot conflict, and the loser takes the next free one.
 */
export default {
  version: 14,
  name: "webhook_endpoint_slots",
  statements: [
    `ALTER TABLE webhook_endpoints ADD COLUMN slot smallint`,
    `UPDATE webhook_endpoints AS e SET slot = numbered.n
      FROM (SELECT id, row_number() OVER (PARTITION BY api_key_id ORDER BY created_at, id) AS n FROM webhook_endpoints) AS numbered
      WHERE e.id = numbered.id`,
    `ALTER TABLE webhook_endpoints ALTER COLUMN slot SET NOT NULL`,
    `ALTER TABLE webhook_endpoints ADD CHECK (slot BETWEEN 1 AND 10)`,
    `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_api_key_id_slot UNIQUE (api_key_id, slot)`
  ]
}
