/**
 * Keys that end by themselves (README "Admin API"): `expires_at`, checked by
 * every lookup. A key past it also stops getting webhook messages, as a
 * revoked one does; the hourly sweep moves keys expired for 30 days to the
 * revoked ones (the purge) through the partial index.
 */
export default {
  version: 15,
  name: "api_key_expiry",
  statements: [
    `ALTER TABLE api_keys ADD COLUMN expires_at timestamptz`,
    `CREATE INDEX api_keys_expires_at ON api_keys (expires_at) WHERE expires_at IS NOT NULL AND revoked_at IS NULL`,
    `CREATE OR REPLACE FUNCTION record_event(event_type text, event_audience text, owner text, event_data jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      new_id text;
    BEGIN
      INSERT INTO events (type, audience, api_key_id, data) VALUES (event_type, event_audience, owner, event_data)
        RETURNING id INTO new_id;
      INSERT INTO webhook_messages (endpoint_id, event_id)
        SELECT e.id, new_id FROM webhook_endpoints AS e JOIN api_keys AS k ON k.id = e.api_key_id
        WHERE e.enabled AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
          AND (cardinality(e.event_types) = 0 OR event_type = ANY (e.event_types))
          AND (event_audience = 'public' OR e.api_key_id = owner OR (event_audience = 'owner' AND k.role = 'staff'));
      -- A hint that wakes the delivering processes; they poll as well, so a lost one delays nothing for long.
      IF FOUND THEN
        PERFORM pg_notify('webhook_messages', '');
      END IF;
    END $$`
  ]
}
