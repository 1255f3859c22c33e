-- A stamp row the relay published in a `stamp-group` job (one claim's stamp rows together: one job's
-- Redis commands for many payments, issue #49) names that job, so the sweeper can tell a row waiting
-- in its group from a row whose job Redis lost. Written by the claim's own UPDATE: no extra write.
ALTER TABLE outbox ADD COLUMN job_group text;

DROP FUNCTION timbra_stale_enqueued_outbox(float8, int);
-- As before (20270111000000), with the row's group job.
CREATE FUNCTION timbra_stale_enqueued_outbox(stale_ms float8, max_rows int)
  RETURNS TABLE (id uuid, stamp_key text, version int, job_group text)
  LANGUAGE plpgsql STABLE SET enable_sort = off AS $$
BEGIN
  RETURN QUERY
    SELECT o.id, o.stamp_key, o.version, o.job_group FROM public.outbox o
    WHERE o.status = 'enqueued' AND o.enqueued_at < now() - make_interval(secs => stale_ms / 1000)
    ORDER BY o.enqueued_at LIMIT max_rows;
END $$;
