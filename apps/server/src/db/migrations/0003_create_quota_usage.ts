/**
 * One row per quota subject (an API key, or a client address without one).
 * `quota_admit` is the whole admission: it runs as one statement, holding the
 * subject's row lock, so no request is admitted over a limit whatever the
 * concurrency and however many server processes share the database.
 */
export default {
  version: 3,
  name: "create_quota_usage",
  statements: [
    `CREATE TABLE quota_usage (
      subject text PRIMARY KEY,
      minute_start bigint NOT NULL,
      minute_count integer NOT NULL DEFAULT 0,
      minute_refused integer NOT NULL DEFAULT 0,
      day_start bigint NOT NULL,
      day_count integer NOT NULL DEFAULT 0,
      banned_until bigint
    )`,
    `CREATE FUNCTION quota_admit(
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
      INSERT INTO quota_usage AS q (subject, minute_start, day_start) VALUES (p_subject, v_minute, v_day)
        ON CONFLICT (subject) DO NOTHING;
      SELECT * INTO r FROM quota_usage AS q WHERE q.subject = p_subject FOR UPDATE;
      IF r.minute_start <> v_minute THEN
        r.minute_start := v_minute; r.minute_count := 0; r.minute_refused := 0;
      END IF;
      IF r.day_start <> v_day THEN
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
