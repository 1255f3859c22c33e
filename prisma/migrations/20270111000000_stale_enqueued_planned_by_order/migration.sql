-- The sweeper asks for rows `enqueued` longer than a while, oldest first, every few seconds. Only
-- outbox_enqueued_idx gives that order; outbox_open_idx (status <> 'done') also covers the rows, and
-- the planner chose it whenever the statistics had seen no open rows and the enqueued index carried
-- more empty pages (each claim leaves entries there until VACUUM): it then read every open row and
-- sorted them, 0.45 ms for 1,000 open rows against 0.01 ms (issue #49, bench:history). In PL/pgSQL
-- with sorting disfavoured, the only plan without a sort is the enqueued index's, whatever the
-- statistics say. Invoker's rights: row-level security applies as to the statement it replaces.
CREATE FUNCTION timbra_stale_enqueued_outbox(stale_ms float8, max_rows int)
  RETURNS TABLE (id uuid, stamp_key text, version int)
  LANGUAGE plpgsql STABLE SET enable_sort = off AS $$
BEGIN
  RETURN QUERY
    SELECT o.id, o.stamp_key, o.version FROM public.outbox o
    WHERE o.status = 'enqueued' AND o.enqueued_at < now() - make_interval(secs => stale_ms / 1000)
    ORDER BY o.enqueued_at LIMIT max_rows;
END $$;
