/** `@timbra/db/payments`: payments, refunds and installments (parcialidades), each written with its invoice. */
export {
  insertPaymentsTakingFolios,
  insertPaymentsWithoutFolios,
  lockPayment,
  setPaymentReceptor,
  knownPayments,
  type NewPayment,
  type InsertedPayment,
  type KnownPayment,
  type LockedPayment,
} from './payments.ts';
export { refundedTotal, reverseRefund, insertRefund, refundByProviderId, standingRefundLines } from './refunds.ts';
export {
  lockInvoiceForInstallment,
  installmentAmounts,
  installmentsPaid,
  insertInstallment,
  installmentByProviderId,
  type InstallmentInvoice,
  type NewInstallment,
} from './installments.ts';
export {
  installmentWithBalance,
  listPayments,
  paymentById,
  paymentExists,
  paymentWithInvoices,
  refundWithEgreso,
  type PaymentFilter,
} from './reads.ts';
