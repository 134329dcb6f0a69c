/**
 * Webhooks (README "Events and webhooks").
 *
 * - `webhook_endpoints`: a key's endpoints, with the signing secret (the HMAC
 *   needs it, so it is stored, never logged) and the one before a rotation.
 * - `webhook_messages`: the delivery queue, one row per event and endpoint
 *   still to deliver. `record_event` fills it in the transaction of the change,
 *   so an event that commits is queued for every endpoint that wants it, and one
 *   that rolls back is queued for none. Processes claim due rows with
 *   `FOR UPDATE SKIP LOCKED` and move `next_attempt_at` ahead by a lease: a
 *   process that dies mid-delivery leaves the row to be claimed again when the
 *   lease ends. A finished row is deleted: the queue holds only work to do, so
 *   its index stays small; autovacuum is told to visit it often.
 * - `webhook_attempts`: every attempt's outcome, insert-only, kept as long as its event.
 */
export default {
  version: 13,
  name: "create_webhooks",
  statements: [
    `CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      api_key_id text NOT NULL REFERENCES api_keys (id),
      url text NOT NULL,
      description text NOT NULL DEFAULT '',
      event_types text[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      failing_since timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX webhook_endpoints_api_key_id ON webhook_endpoints (api_key_id, created_at)`,
    `CREATE TABLE webhook_messages (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      queued_at timestamptz NOT NULL DEFAULT now()
    ) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`,
    `CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at)`,
    `CREATE INDEX webhook_messages_endpoint_id ON webhook_messages (endpoint_id)`,
    `CREATE INDEX webhook_messages_event_id ON webhook_messages (event_id)`,
    `CREATE TABLE webhook_attempts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      attempted_at timestamptz NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
      status_code integer,
      latency_ms integer NOT NULL,
      error text,
      next_attempt_at timestamptz
    )`,
    `CREATE INDEX webhook_attempts_endpoint_id_id ON webhook_attempts (endpoint_id, id)`,
    `CREATE INDEX webhook_attempts_event_id ON webhook_attempts (event_id)`,
    // Every event is queued for each enabled endpoint of a live key that wants its type and may see it
    // (a customer key: pet events and its own; a staff key: every order's too). Test events are queued by hand.
    `CREATE OR REPLACE FUNCTION record_event(event_type text, event_audience text, owner text, event_data jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      new_id text;
    BEGIN
      INSERT INTO events (type, audience, api_key_id, data) VALUES (event_type, event_audience, owner, event_data)
        RETURNING id INTO new_id;
      INSERT INTO webhook_messages (endpoint_id, event_id)
        SELECT e.id, new_id FROM webhook_endpoints AS e JOIN api_keys AS k ON k.id = e.api_key_id
        WHERE e.enabled AND k.revoked_at IS NULL
          AND (cardinality(e.event_types) = 0 OR event_type = ANY (e.event_types))
          AND (event_audience = 'public' OR e.api_key_id = owner OR (event_audience = 'owner' AND k.role = 'staff'));
      -- A hint that wakes the delivering processes; they poll as well, so a lost one delays nothing for long.
      IF FOUND THEN
        PERFORM pg_notify('webhook_messages', '');
      END IF;
    END $$`
  ]
}
