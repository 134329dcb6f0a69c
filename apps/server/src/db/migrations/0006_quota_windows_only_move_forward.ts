/**
 * Quota windows only move forward. Each server process passes its own clock's
 * time, and hosts' clocks disagree by a little: a host whose clock lags, working
 * just after a minute boundary, used to move the shared row back to the old
 * minute and restart its counts (measured: 230 requests admitted where 120
 * may be, with one host 1.5 s behind). Now a request whose time falls before
 * the row's window counts in that window, so whatever the skew, no window
 * admits more than its limit and admission needs no agreement between clocks.
 */
export default {
  version: 6,
  name: "quota_windows_only_move_forward",
  statements: [
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
      INSERT INTO quota_usage AS q (subject, minute_start, day_start) VALUES (p_subject, v_minute, v_day)
        ON CONFLICT (subject) DO NOTHING;
      SELECT * INTO r FROM quota_usage AS q WHERE q.subject = p_subject FOR UPDATE;
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
