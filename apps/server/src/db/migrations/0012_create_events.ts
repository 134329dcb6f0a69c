/**
 * Events (README "Events and webhooks"): the transactional outbox. Triggers on
 * `pets` and `orders` write an event in the transaction of the change itself,
 * whichever statement makes it (a batch of creates, an idempotent completion,
 * an order's move with its pet): a rolled-back change has no event, a committed
 * one always has its event.
 *
 * Order: `tx` is the writing transaction's id (`pg_current_xact_id()`), `seq`
 * the order of writing. A transaction that started writing earlier may commit
 * later, so neither `seq` nor `tx` alone is a safe cursor. Readers take only
 * events whose `tx` is below the oldest transaction still running
 * (`pg_snapshot_xmin`), in (tx, seq) order: every event that can still appear
 * has a larger `tx` than any event shown, so a cursor never skips one.
 *
 * `audience`: `public` (pet events: every key), `owner` (order events: the
 * ordering key, and staff keys), `private` (a test event: its key alone).
 */
export default {
  version: 12,
  name: "create_events",
  statements: [
    `CREATE TABLE events (
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
      id text NOT NULL UNIQUE DEFAULT ('evt_' || replace(gen_random_uuid()::text, '-', '')),
      type text NOT NULL,
      audience text NOT NULL CHECK (audience IN ('public', 'owner', 'private')),
      api_key_id text,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      data jsonb NOT NULL,
      PRIMARY KEY (tx, seq),
      CHECK ((audience = 'public') = (api_key_id IS NULL))
    )`,
    // A key's own events (orders, tests), for a customer's list; the retention sweep walks occurred_at.
    `CREATE INDEX events_api_key_id_tx_seq ON events (api_key_id, tx, seq) WHERE api_key_id IS NOT NULL`,
    `CREATE INDEX events_occurred_at ON events (occurred_at)`,
    `CREATE FUNCTION pet_json(p pets) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
      SELECT jsonb_build_object('id', p.id, 'name', p.name, 'categoryId', p.category_id, 'status', p.status)
    $$`,
    `CREATE FUNCTION order_json(o orders) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
      SELECT jsonb_build_object('id', o.id, 'petId', o.pet_id, 'status', o.status,
        'placedAt', to_char(o.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'updatedAt', to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    $$`,
    // One function writes every event, so that delivery (a later migration) hooks in at one place.
    `CREATE FUNCTION record_event(event_type text, event_audience text, owner text, event_data jsonb) RETURNS void
    LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO events (type, audience, api_key_id, data) VALUES (event_type, event_audience, owner, event_data);
    END $$`,
    `CREATE FUNCTION pets_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM record_event('pet.created', 'public', NULL, pet_json(NEW));
      ELSIF TG_OP = 'UPDATE' THEN
        PERFORM record_event('pet.updated', 'public', NULL, pet_json(NEW));
      ELSE
        PERFORM record_event('pet.deleted', 'public', NULL, pet_json(OLD));
      END IF;
      RETURN NULL;
    END $$`,
    `CREATE TRIGGER pets_events_insert_delete AFTER INSERT OR DELETE ON pets
      FOR EACH ROW EXECUTE FUNCTION pets_record_event()`,
    // A patch that changes nothing keeps the version (Pets.update): no event either.
    `CREATE TRIGGER pets_events_update AFTER UPDATE ON pets
      FOR EACH ROW WHEN ((OLD.name, OLD.category_id, OLD.status) IS DISTINCT FROM (NEW.name, NEW.category_id, NEW.status))
      EXECUTE FUNCTION pets_record_event()`,
    `CREATE FUNCTION orders_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM record_event('order.placed', 'owner', NEW.api_key_id, order_json(NEW));
      ELSIF NEW.status IN ('cancelled', 'delivered') THEN
        PERFORM record_event('order.' || NEW.status, 'owner', NEW.api_key_id, order_json(NEW));
      END IF;
      RETURN NULL;
    END $$`,
    `CREATE TRIGGER orders_events_insert AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION orders_record_event()`,
    `CREATE TRIGGER orders_events_update AFTER UPDATE ON orders
      FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION orders_record_event()`
  ]
}
