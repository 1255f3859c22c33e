import { DOMAIN_ERROR_CODES, type DomainError } from '../domain-errors.ts';

/**
 * The API's errors: each has a stable `code` and HTTP status. docs/errors.md lists them all (a test
 * fails when this list and the document drift apart).
 */
export const API_ERRORS = {
  malformed_json: { status: 400, message: 'The body is not valid JSON.' },
  credentials_in_query: {
    status: 400,
    message: 'Credentials go in the Authorization (or X-Api-Key) header, never in the URL.',
  },
  invalid_characters: {
    status: 400,
    message: 'A field holds U+0000, a control character or a lone surrogate, which no invoice can carry.',
  },
  unknown_parameter: {
    status: 400,
    message: 'A query parameter this list does not take; the message names those it does.',
  },
  invalid_idempotency_key: { status: 400, message: 'Idempotency-Key must be 1–255 printable ASCII characters.' },
  unknown_api_version: {
    status: 400,
    message: 'Timbra-Version names no version of this API; details list those it has (docs/versioning.md).',
  },
  idempotency_required: {
    status: 400,
    message: 'Send an Idempotency-Key header or an externalId: without either, a retry would record this twice.',
  },
  unauthorized: { status: 401, message: 'A valid API key is required.' },
  invalid_signature: { status: 401, message: 'The webhook signature is missing, invalid or too old.' },
  forbidden: { status: 403, message: 'This API key may not do that.' },
  not_found: { status: 404, message: 'Not found.' },
  platform_mode_off: {
    status: 404,
    message: 'Organizations are managed in platform mode only: this deployment has no PLATFORM_KEY.',
  },
  ticket_not_found: { status: 404, message: 'No ticket has this code and total.' },
  idempotency_key_reused: { status: 409, message: 'This Idempotency-Key was used with a different request.' },
  idempotency_key_in_use: { status: 409, message: 'A request with this Idempotency-Key is still being processed.' },
  payment_conflict: { status: 409, message: 'A payment with this external id already exists with other data.' },
  payment_not_found_yet: { status: 409, message: 'The refunded payment is not known yet; retry later.' },
  not_cancellable: { status: 409, message: 'Only a stamped invoice can be cancelled.' },
  not_installments: { status: 409, message: 'This invoice is not a PPD Ingreso sold in installments.' },
  installment_conflict: { status: 409, message: 'An installment with this external id exists with other data.' },
  refund_conflict: { status: 409, message: 'A refund with this external id exists with other data.' },
  not_retryable: { status: 409, message: 'Only a dead-lettered (failed) outbox row can be re-driven.' },
  permanent_rejection: {
    status: 409,
    message:
      'The PAC refused these bytes for good: the same document would be refused again. Correct the invoice (PATCH /v1/invoices/:id), or resend with force: true if what the PAC checked has changed.',
  },
  not_stamped: { status: 409, message: 'The invoice is not stamped yet: it has no printed representation.' },
  endpoint_disabled: {
    status: 409,
    message: 'The webhook endpoint is disabled: enable it (PATCH status enabled) before replaying to it.',
  },
  not_correctable: {
    status: 409,
    message: 'Only an invoice not stamped (needs_data, stamp_failed, or pending past its window) can be corrected.',
  },
  correction_in_progress: { status: 409, message: 'A correction of this invoice is still being proved.' },
  not_replaceable: { status: 409, message: 'Only a stamped Ingreso not replaced yet can be replaced.' },
  invoice_cancelled: {
    status: 409,
    message: "The payment's invoice is cancelled (or being cancelled): no Egreso can relate to it.",
  },
  ticket_already_invoiced: {
    status: 409,
    message: 'This ticket was self-invoiced already (to another RFC): it cannot be invoiced twice.',
  },
  ticket_in_global: {
    status: 409,
    message: "The ticket's period is closed: it is in the period's factura global and cannot be self-invoiced.",
  },
  ticket_refunded: {
    status: 409,
    message: 'The ticket was refunded (in full or in part): it cannot be self-invoiced.',
  },
  global_mode_off: {
    status: 409,
    message:
      'Público en general is invoiced per payment here (PUBLICO_GENERAL_MODE=per-payment): no tickets or globals.',
  },
  payload_too_large: { status: 413, message: 'The body is too large.' },
  unsupported_media_type: { status: 415, message: 'Send application/json.' },
  validation_failed: { status: 422, message: 'The request has invalid fields.' },
  fiscal_rules_failed: {
    status: 422,
    message: 'The CFDI this request would issue breaks SAT rules; nothing was recorded.',
  },
  lines_total_mismatch: {
    status: 422,
    message: 'The lines, with their taxes, do not add up to the amount paid; details say by how much.',
  },
  no_email_address: {
    status: 422,
    message: 'Neither the request (to) nor the payment has an email address to send the invoice to.',
  },
  product_not_found: { status: 422, message: 'A line names a product that does not exist or is not active.' },
  customer_not_found: { status: 422, message: 'The customer named does not exist.' },
  exchange_rate_unavailable: {
    status: 422,
    message: 'No TipoCambio for this currency: send tipoCambio, or configure a rate source (EXCHANGE_RATE_SOURCE).',
  },
  exchange_rate_out_of_range: {
    status: 422,
    message: "The TipoCambio is outside the variation c_Moneda allows around the day's published rate.",
  },
  product_reference_taken: { status: 409, message: 'A product with this reference exists.' },
  key_name_taken: { status: 409, message: 'An API key with this name exists.' },
  organization_exists: {
    status: 409,
    message: 'An organization with this RFC exists with other facts; details name it.',
  },
  connect_not_configured: {
    status: 409,
    message: 'Stripe Connect is not available here (details: why): STRIPE_CONNECT_* unset, or the home organization.',
  },
  connected_account_taken: { status: 409, message: 'Another organization has this Stripe connected account.' },
  organization_is_test: {
    status: 409,
    message: 'This organization is a test twin: do this on its live organization (details name it).',
  },
  organization_without_csd: {
    status: 409,
    message:
      'This organization has no CSD to seal with yet: the platform uploads one (POST /v1/organizations/:id/csds).',
  },
  csd_already_stored: { status: 409, message: 'This CSD (its NoCertificado) is stored already.' },
  csd_rejected: {
    status: 422,
    message: 'The CSD does not pass its checks (details: which one); nothing was stored.',
  },
  efirma_already_stored: { status: 409, message: 'This e.firma (its NoCertificado) is stored already.' },
  efirma_rejected: {
    status: 422,
    message: 'The e.firma does not pass its checks (details: which one); nothing was stored.',
  },
  customer_conflict: { status: 409, message: 'Another customer has this Stripe or Mercado Pago id.' },
  installment_exceeds_balance: { status: 422, message: 'The installment is more than the invoice still owes.' },
  refund_exceeds_payment: { status: 422, message: 'The refunds would add up to more than the payment.' },
  occurred_in_future: {
    status: 422,
    message: 'The time given is in the future (more than 5 minutes ahead of our clock).',
  },
  rate_limited: { status: 429, message: 'Too many requests.' },
  webhook_not_configured: { status: 503, message: 'This webhook is not configured.' },
  vault_not_configured: {
    status: 503,
    message:
      'CSDs, e.firmas and provider secrets are stored sealed by the master keys (VAULT_KEYS), which this deployment has not set.',
  },
  unavailable: { status: 503, message: 'A dependency is unavailable.' },
  database_unavailable: {
    status: 503,
    message: 'The database is unreachable or busy; retry in a few seconds (with the same Idempotency-Key).',
  },
  exchange_rate_source_down: {
    status: 503,
    message: 'The exchange rate source did not answer; retry later (or send tipoCambio).',
  },
  internal: { status: 500, message: 'Internal error.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** The family of an error (as Stripe's `type`), for code that handles a kind of failure alike. */
export const API_ERROR_TYPES = [
  'invalid_request_error',
  'idempotency_error',
  'authentication_error',
  'permission_error',
  'rate_limit_error',
  'api_error',
] as const;
export type ApiErrorType = (typeof API_ERROR_TYPES)[number];

export function errorTypeOf(code: ApiErrorCode): ApiErrorType {
  if (code.startsWith('idempotency_') || code === 'invalid_idempotency_key') return 'idempotency_error';
  const { status } = API_ERRORS[code];
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** The request field an error is about: the first problem's path, when its details name one. */
export function paramOf(details: unknown): string | undefined {
  if (!Array.isArray(details)) return undefined;
  const path = (details[0] as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' && path !== '' ? path : undefined;
}

// Every domain error code is an API error code: the compiler refuses a domain code without its status.
const _domainCodesAreApiCodes: readonly ApiErrorCode[] = DOMAIN_ERROR_CODES;

/** The HTTP form of a use case's refusal. */
export function fromDomainError(error: DomainError): ApiError {
  return new ApiError(error.code, error.hasOwnMessage ? error.message : undefined, error.details);
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ApiErrorCode,
    message?: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message ?? API_ERRORS[code].message);
    this.name = 'ApiError';
    this.status = API_ERRORS[code].status;
  }
}
