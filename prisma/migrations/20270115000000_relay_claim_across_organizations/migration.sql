-- Platform mode's relay claims for several organizations in one statement: each organization's
-- due rows, oldest first, within its share of the queue (outbox/share.ts, claimOutboxAcross). The
-- index of pending rows by organization now orders each one's rows by available_at, so an
-- organization's claim reads its own first rows however long another's backlog is. It still
-- answers timbra_pending_organizations()'s skip scan (organization_id leads).
CREATE INDEX outbox_pending_organization_available_idx ON outbox (organization_id, available_at) WHERE status = 'pending';
DROP INDEX outbox_pending_organization_idx;
ALTER INDEX outbox_pending_organization_available_idx RENAME TO outbox_pending_organization_idx;
