-- What Postgres spent on the statements of a stamped payment that are not the payment's own writes
-- (issue #49; perf on a backend, 2026-12-06):
--
-- 1. The event writers were planned again at each call. A trigger's queries run with the session's
--    plan_cache_mode: `auto` keeps custom plans while it judges the generic plan's estimate worse,
--    and for these (arrays unnested, transition tables) it always does. Planning was ~40% of a
--    one-invoice UPDATE's CPU (its statement-level trigger writing the invoice.stamped event):
--    0.51 → 0.30 ms a statement. Their plans need no parameter's value (no partial index a
--    parameter decides), so they are planned once per session, whatever the caller's setting.
-- 2. timbra_uuid7() ran as a SQL function the planner could not inline (a FROM clause): its body
--    parsed and planned again in every statement whose rows it names (events, deliveries). Written
--    as one expression, it is inlined: 0.30 → 0.27 ms. The same bits: 48 of Unix milliseconds, the
--    version (7), then random bits with a version-4 UUID's variant (now from two of them).
--
-- A CREATE OR REPLACE of one of these functions drops its SET clause unless it says it again: the
-- schema test checks each one keeps it.
ALTER FUNCTION timbra_record_events(text[], uuid[], uuid[], uuid[], jsonb[]) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION invoices_record_events_inserted() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION invoices_record_events_updated() SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION payments_record_events() SET plan_cache_mode = force_generic_plan;

CREATE OR REPLACE FUNCTION timbra_uuid7(at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7'
          || substr(gen_random_uuid()::text, 16, 3) || substr(replace(gen_random_uuid()::text, '-', ''), 17, 16))::uuid
$$;
