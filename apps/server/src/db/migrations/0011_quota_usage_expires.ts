/**
 * Quota rows expire. A row is kept while a window of its subject may still
 * count: a key's day (its daily quota), a client address's minute (addresses
 * have no daily window), and a ban; `expires_at` is the latest of those ends,
 * computed by PostgreSQL from the row. `QuotaStore.postgres` deletes rows a
 * minute past it (a grace for hosts whose clocks lag), in batches of bounded
 * size found through the index, so a sweep costs what it deletes, whatever the
 * number of subjects. `quota_admit` locks the row before it inserts one, so a
 * row swept between the two is made again instead of read as missing.
 */
export default {
  version: 11,
  name: "quota_usage_expires",
  statements: [
    `ALTER TABLE quota_usage ADD COLUMN expires_at bigint GENERATED ALWAYS AS (
      GREATEST(
        CASE WHEN subject LIKE 'address:%' THEN minute_start + 60000 ELSE day_start + 86400000 END,
        banned_until
      )
    ) STORED`,
    `CREATE INDEX quota_usage_expires_at ON quota_usage (expires_at)`,
    `CREATE OR REPLACE FUNCTION quota_admit(
      p_subject text, p_now bigint, p_per_minute integer, p_per_day integer,
      p_ban_threshold integer, p_ban_millis bigint, p_consume boolean
    ) RETURNS TABLE (admitted boolean, minute_start bigint, minute_count integer, day_start bigint, day_count integer, banned_until bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      v_minute bigint := p_now - p_now % 60000;
      v_day bigint := p_now - p_now % 86400000;
      v_admitted boolean;
      r quota_usage%ROWTYPE;
    BEGIN
      -- The row may be swept away between finding it taken and locking it: then it is made again.
      LOOP
        SELECT * INTO r FROM quota_usage AS q WHERE q.subject = p_subject FOR UPDATE;
        EXIT WHEN FOUND;
        INSERT INTO quota_usage AS q (subject, minute_start, day_start) VALUES (p_subject, v_minute, v_day)
          ON CONFLICT (subject) DO NOTHING;
      END LOOP;
      IF v_minute > r.minute_start THEN
        r.minute_start := v_minute; r.minute_count := 0; r.minute_refused := 0;
      END IF;
      IF v_day > r.day_start THEN
        r.day_start := v_day; r.day_count := 0;
      END IF;
      IF r.banned_until <= p_now THEN
        r.banned_until := NULL;
      END IF;
      v_admitted := r.banned_until IS NULL AND r.minute_count < p_per_minute AND r.day_count < p_per_day;
      IF p_consume THEN
        IF v_admitted THEN
          r.minute_count := r.minute_count + 1;
          r.day_count := r.day_count + 1;
        ELSIF r.banned_until IS NULL THEN
          r.minute_refused := r.minute_refused + 1;
          IF r.minute_refused > p_ban_threshold THEN
            r.banned_until := p_now + p_ban_millis;
          END IF;
        END IF;
        UPDATE quota_usage AS q SET
          minute_start = r.minute_start, minute_count = r.minute_count, minute_refused = r.minute_refused,
          day_start = r.day_start, day_count = r.day_count, banned_until = r.banned_until
        WHERE q.subject = p_subject;
      END IF;
      RETURN QUERY SELECT v_admitted, r.minute_start, r.minute_count, r.day_start, r.day_count, r.banned_until;
    END
    $$`
  ]
}
