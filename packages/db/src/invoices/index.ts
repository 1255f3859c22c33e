/** `@timbra/db/invoices`: the invoice rows, their state machine, the gapless folio counter, frozen versions and corrections, cancellation requests. */
export {
  INVOICE_STATUSES,
  INITIAL_STATUSES,
  TRANSITIONS,
  assertTransition,
  canTransition,
  statusGuard,
  InvalidTransitionError,
  type InvoiceStatus,
} from './invoice-status.ts';
export { emisorById, emisorByRfc, ensureEmisor, ensureSeries, SerieNotConfiguredError, takeFolio } from './folios.ts';
export {
  insertInvoices,
  lockInvoice,
  lockInvoiceShared,
  invoiceStateOf,
  ingresoOf,
  invoiceByUuid,
  standingRelatedCount,
  markCancelRequested,
  type InvoiceKind,
  type FrozenDocument,
  type NewInvoice,
  type InvoiceState,
} from './invoices.ts';
export {
  lockWaitingDependents,
  markDependentFrozen,
  markDependentNeedsData,
  invoicesWithOverdueDependents,
  type WaitingDependent,
} from './dependents.ts';
export {
  lockCorrectableInvoice,
  pacsThatReceived,
  holdStampRow,
  releaseStampRow,
  freezeVersion,
  type CorrectableInvoice,
  type ReceivingPac,
  type NewVersion,
  type CorrectionPayload,
} from './versions.ts';
export {
  insertCorrection,
  claimDueCorrections,
  settleCorrection,
  startLateRefreezes,
  type NewCorrection,
  type ProvingCorrection,
  type CorrectionOutcome,
} from './corrections.ts';
export {
  insertCancelRequest,
  requestDuplicateCancellation,
  requestReplacedCancellation,
  replacementsAwaitingCancellation,
  type ReplacedCancellation,
  loadCancelRow,
  finishCancellation,
  markCancellationAccepted,
  recordCancellationPoll,
  type DuplicateCancellation,
  type CancelRow,
} from './cancellations.ts';
export {
  cancelRequestById,
  cancelRequestOf,
  correctionById,
  invoiceExists,
  invoiceForCustomer,
  invoiceWithHistory,
  invoiceVersionState,
  invoiceWithVersions,
  listInvoices,
  stampedDocumentOf,
  type InvoiceFilter,
  type InvoiceWithHistory,
} from './reads.ts';
export { recordReplacement, replacementOf, type Replacement } from './replacements.ts';
export {
  invoicesInNeedsData,
  namedInvoiceId,
  namedInvoiceWithHistory,
  namedInvoiceWithVersions,
  stampedUuids,
} from './operator-reads.ts';
export {
  adoptSatStamp,
  finishSatReconciliation,
  invoicesForSat,
  invoiceVersionsBySerieFolio,
  latestSatReconciliations,
  liveRfcOf,
  SatReconciliationRunning,
  startSatReconciliation,
  type InvoiceForSat,
  type SatReconciliationRow,
} from './sat-record.ts';
export { stampedCopies, forgetStampedCopies, type StampedCopy } from './stamped-copies.ts';
