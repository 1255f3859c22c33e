import type { WebhookDelivery } from './record-webhook.ts';
import { receptorFromMetadata } from './receptor.ts';

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
    },
  };
}

/** An address a provider gave, if it looks like one (a provider may send anything; nothing is refused for it). */
export function emailOrNull(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const email = value.trim();
  return email.length <= 254 && /^[^@\s]+@[^@\s]+$/.test(email) ? email : null;
}
