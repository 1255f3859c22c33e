/**
 * What money a provider reports as received means for the invoice: the delivery we record (moneyIn),
 * the customer named by the payment's metadata (receptorFromMetadata), and the FormaPago from how it
 * was paid (one table per provider). Metadata keys are the same for every provider (docs/webhooks.md).
 */
import { catalogs } from '@timbra/cfdi-core';
import { providerMetadata } from '@timbra/db';
import type { WebhookDelivery } from './record-webhook.ts';
import { namedReceptor, type ReceptorInput } from '../payments/build-ingreso.ts';

/**
 * Money a provider reports as received, as we record it: a payment and its Ingreso — PPD when the
 * metadata says `payment_terms: installments` — or, when the metadata names `invoice_id` (a PPD
 * Ingreso of ours), an installment of that invoice and its Pago. Metadata keys are the same for
 * every provider (docs/webhooks.md).
 */
export function moneyIn(received: {
  provider: string;
  externalId: string;
  /** Decimal string. */
  amount: string;
  currency: string;
  occurredAt: Date;
  metadata: Record<string, unknown> | null | undefined;
  description: string | null | undefined;
  /** c_FormaPago of this money (from the payment method, or metadata `forma_pago`). */
  formaPago: string;
  /** The payer's address as the provider knows it: the customer's copy is emailed there. */
  email?: string | null | undefined;
}): Pick<WebhookDelivery, 'payment' | 'installment'> {
  const meta = (key: string) => {
    const value = received.metadata?.[key];
    return typeof value === 'string' ? value.trim() : undefined;
  };
  const invoiceId = meta('invoice_id');
  if (invoiceId) {
    return {
      installment: {
        invoiceId,
        provider: received.provider,
        externalId: received.externalId,
        amount: received.amount,
        paidAt: received.occurredAt,
        formaPago: received.formaPago,
      },
    };
  }
  const installments = meta('payment_terms') === 'installments';
  return {
    payment: {
      provider: received.provider,
      externalId: received.externalId,
      amount: received.amount,
      currency: received.currency,
      occurredAt: received.occurredAt,
      receptor: receptorFromMetadata(received.metadata),
      description: received.description ?? null,
      formaPago: installments ? '99' : received.formaPago,
      paymentTerms: installments ? 'installments' : 'single',
      email: emailOrNull(received.email),
      // The provider's metadata rides along (its strings, within the limits), for the merchant's own ids.
      metadata: providerMetadata(received.metadata),
    },
  };
}

/** An address a provider gave, if it looks like one (a provider may send anything; nothing is refused for it). */
export function emailOrNull(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const email = value.trim();
  return email.length <= 254 && /^[^@\s]+@[^@\s]+$/.test(email) ? email : null;
}

/**
 * The customer's fiscal data from a payment's metadata. Keys (documented in docs/api.md):
 * `rfc`, `razon_social`, `regimen_fiscal`, `codigo_postal`, `uso_cfdi`, and for a foreign customer
 * `residencia_fiscal`, `num_reg_id_trib`. Without `rfc` (or with público en general written out) the
 * invoice goes to público en general; with `rfc` but missing fields it is recorded as needing data.
 */
export function receptorFromMetadata(metadata: Record<string, unknown> | null | undefined): ReceptorInput | null {
  const get = (k: string) => (typeof metadata?.[k] === 'string' ? metadata[k].trim() : '');
  const rfc = get('rfc').toUpperCase();
  if (!rfc) return null;
  const residenciaFiscal = get('residencia_fiscal').toUpperCase();
  const numRegIdTrib = get('num_reg_id_trib');
  return namedReceptor({
    rfc,
    nombre: get('razon_social'),
    regimenFiscal: get('regimen_fiscal'),
    codigoPostal: get('codigo_postal'),
    usoCfdi: get('uso_cfdi').toUpperCase(),
    ...(residenciaFiscal ? { residenciaFiscal } : {}),
    ...(numRegIdTrib ? { numRegIdTrib } : {}),
  });
}

/**
 * The CFDI's FormaPago (c_FormaPago) of money a provider received, from how it was paid. One table
 * per provider; docs/webhooks.md ("FormaPago") shows both. A method not listed gets
 * DEFAULT_FORMA_PAGO. A payment's metadata `forma_pago` (a c_FormaPago code other than 99) wins
 * over the method, for merchants who know better.
 */

/** Stripe: `payment_method_details.type`, and for cards their `funding`. */
export function stripeFormaPago(
  details: { type: string; card?: { funding?: string | null } | null } | null | undefined,
): string | undefined {
  if (!details) return undefined;
  if (details.type === 'card' || details.type === 'card_present') {
    const funding = details.card?.funding;
    return funding === 'credit' ? '04' : funding === 'debit' || funding === 'prepaid' ? '28' : undefined;
  }
  return STRIPE_METHODS[details.type];
}

const STRIPE_METHODS: Readonly<Record<string, string>> = {
  oxxo: '01', // cash at an OXXO store
  customer_balance: '03', // bank transfer (SPEI) to the customer's balance
};

/** Mercado Pago: `payment_type_id`. */
export function mercadoPagoFormaPago(paymentType: string | null | undefined): string | undefined {
  return MERCADOPAGO_TYPES[paymentType ?? ''];
}

const MERCADOPAGO_TYPES: Readonly<Record<string, string>> = {
  credit_card: '04',
  debit_card: '28',
  prepaid_card: '28',
  account_money: '05', // monedero electrónico (Mercado Pago balance)
  bank_transfer: '03',
  ticket: '01', // cash (OXXO and other stores)
  atm: '01',
};

/** The FormaPago to invoice: the metadata's valid `forma_pago`, else the method's, else the default. */
export function formaPagoOf(
  metadata: Record<string, unknown> | null | undefined,
  fromMethod: string | undefined,
  fallback: string,
): string {
  const given = typeof metadata?.forma_pago === 'string' ? metadata.forma_pago.trim() : '';
  if (given !== '99' && Object.hasOwn(catalogs.FORMA_PAGO, given)) return given;
  return fromMethod ?? fallback;
}
