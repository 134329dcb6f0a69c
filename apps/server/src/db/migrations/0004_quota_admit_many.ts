/**
 * Admits a batch of requests, from any number of subjects, in one statement:
 * the server collects the admissions of concurrent requests and sends them
 * together, so the quota round trip is shared instead of paid per request.
 * Each element gets exactly what `quota_admit` alone would give it. Subjects
 * are locked in sorted order, so batches from several processes never deadlock;
 * a subject's own requests keep their arrival order.
 */
export default {
  version: 4,
  name: "quota_admit_many",
  statements: [
    `CREATE FUNCTION quota_admit_many(
      p_subjects text[], p_nows bigint[], p_per_minutes integer[], p_per_days integer[],
      p_ban_thresholds integer[], p_ban_millis bigint, p_consumes boolean[]
    ) RETURNS TABLE (ordinal integer, admitted boolean, minute_start bigint, minute_count integer, day_start bigint, day_count integer, banned_until bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      item record;
    BEGIN
      FOR item IN
        SELECT * FROM unnest(p_subjects, p_nows, p_per_minutes, p_per_days, p_ban_thresholds, p_consumes)
          WITH ORDINALITY AS batch(subject, now, per_minute, per_day, ban_threshold, consume, position)
        ORDER BY batch.subject, batch.position
      LOOP
        RETURN QUERY SELECT item.position::integer, one.*
          FROM quota_admit(item.subject, item.now, item.per_minute, item.per_day, item.ban_threshold, p_ban_millis, item.consume) AS one;
      END LOOP;
    END
    $$`
  ]
}
