-- One reconciliation with the SAT's record running per organization at a time: two sweepers (or a
-- sweeper and an operator) asking the SAT the same thing would spend its limit on identical
-- requests (twice, ever) and write two runs. A run that died unfinished is closed as abandoned by the
-- next start once its longest wait has passed (@timbra/db/invoices, startSatReconciliation).
CREATE UNIQUE INDEX sat_reconciliations_running_idx ON sat_reconciliations (organization_id)
  WHERE finished_at IS NULL;
