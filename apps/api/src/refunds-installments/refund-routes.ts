/**
 * Refunds of payments (each an Egreso) and amounts received against a sale in installments (each a
 * Pago): `POST /v1/payments/:id/refunds`, `POST /v1/invoices/:id/payments`.
 */
import { randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { catalogs } from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import { installmentWithBalance, paymentExists, refundWithEgreso } from '@timbra/db/payments';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import { amountSchema, printable } from '../http/schemas.ts';
import { installmentView, refundView } from '../http/views.ts';
import { validation } from '../http/lists.ts';
import type { PaymentRoutesDeps } from '../payments/payment-routes.ts';
import { recordInstallment } from './record-installment.ts';
import { recordRefund } from './record-refund.ts';

export const createRefundSchema = z
  .object({
    amount: amountSchema,
    /** How the money went back (c_FormaPago, not 99). Default: the payment's; required for a sale in installments. */
    formaPago: z
      .string()
      .refine((f) => Object.hasOwn(catalogs.FORMA_PAGO, f) && f !== '99', 'a c_FormaPago code other than 99')
      .optional(),
    /** Your id for the refund; a second refund with the same id is the same refund. Without it, an Idempotency-Key is required. */
    externalId: printable(128).optional(),
    occurredAt: z.iso.datetime({ offset: true }).optional(),
    /** The payment's lines it gives back (line: its index, from 0), adding up to `amount`. Absent: all of them, in proportion. */
    lines: z
      .array(z.object({ line: z.number().int().min(0).max(999), amount: amountSchema }).strict())
      .min(1)
      .max(1000)
      .optional(),
    /** A payment in another currency: pesos per unit on the refund's day (default: the rate source's for that day). */
    tipoCambio: z
      .string()
      .regex(/^\d{1,12}(\.\d{1,6})?$/, 'a positive decimal with up to 6 decimals')
      .refine((t) => Number(t) > 0, 'greater than 0')
      .optional(),
  })
  .strict();

export const createInstallmentSchema = z
  .object({
    amount: amountSchema,
    /** FechaPago: when the money was received. */
    paidAt: z.iso.datetime({ offset: true }),
    formaPago: z
      .string()
      .refine((f) => Object.hasOwn(catalogs.FORMA_PAGO, f) && f !== '99', 'a c_FormaPago code other than 99'),
    /** Your id for the installment; the same id again is the same installment. Without it, an Idempotency-Key is required. */
    externalId: printable(128).optional(),
    /** The bank's operation number (NumOperacion), e.g. a SPEI tracking key. */
    numOperacion: z
      .string()
      .regex(/^[^|]{1,100}$/, '1–100 characters, no |')
      .optional(),
    /** An invoice in another currency: pesos per unit on the day paid (default: the rate source's for that day). */
    tipoCambioP: z
      .string()
      .regex(/^\d{1,12}(\.\d{1,6})?$/, 'a positive decimal with up to 6 decimals')
      .refine((t) => Number(t) > 0, 'greater than 0')
      .optional(),
  })
  .strict();

/**
 * A creating request that names no id of its own (`externalId`) must carry an Idempotency-Key: with
 * neither, a client's retry after a timeout would record the refund (installment) twice.
 *
 * @throws ApiError idempotency_required (400)
 */
function requireIdempotency(req: Request, externalId: string | undefined): void {
  if (externalId === undefined && !req.get('idempotency-key')) throw new ApiError('idempotency_required');
}

export function refundInstallmentRoutes(deps: PaymentRoutesDeps): Router {
  const router = Router();
  uuidParams(router, 'id');
  const respondOnce = idempotentResponder(deps);

  router.post('/payments/:id/refunds', postRefund(deps, respondOnce));
  router.post('/invoices/:id/payments', postInstallment(deps, respondOnce));
  return router;
}

/**
 * A refund of a payment (partial refunds allowed; never more than paid in all) and its Egreso,
 * frozen now if the Ingreso is stamped, else once it is.
 */
function postRefund(deps: PaymentRoutesDeps, respondOnce: ReturnType<typeof idempotentResponder>) {
  return async (req: Request, res: Response) => {
    const client = req.client!;
    const paymentId = String(req.params.id);
    const parsed = createRefundSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    requireIdempotency(req, input.externalId);
    const externalId = input.externalId ?? randomUUID();
    const occurredAt = input.occurredAt ? new Date(input.occurredAt) : new Date();

    const create = async (tx: Tx) => {
      if (!(await paymentExists(tx, paymentId))) throw new ApiError('not_found');
      const recorded = await recordRefund(tx, deps.payments, {
        payment: { id: paymentId },
        provider: `api:${client.name}`,
        externalId,
        amount: input.amount,
        occurredAt,
        ...(input.formaPago ? { formaPago: input.formaPago } : {}),
        ...(input.lines ? { lines: input.lines } : {}),
        ...(input.tipoCambio ? { tipoCambio: input.tipoCambio } : {}),
        strictRate: true,
      });
      const refund = await refundWithEgreso(tx, recorded.refundId);
      return {
        status: recorded.created ? 201 : 200,
        body: refundView(refund, refund.egreso, recorded.waitingFor),
      };
    };
    await respondOnce(req, res, `/v1/payments/${paymentId}/refunds`, input, create);
  };
}

/**
 * An amount received against a PPD Ingreso (sold in installments) and its Pago (complemento de
 * pago 2.0), frozen now if the Ingreso is stamped, else once it is.
 */
function postInstallment(deps: PaymentRoutesDeps, respondOnce: ReturnType<typeof idempotentResponder>) {
  return async (req: Request, res: Response) => {
    const client = req.client!;
    const invoiceId = String(req.params.id);
    const parsed = createInstallmentSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    requireIdempotency(req, input.externalId);
    const externalId = input.externalId ?? randomUUID();

    const create = async (tx: Tx) => {
      const recorded = await recordInstallment(tx, deps.payments, {
        invoiceId,
        provider: `api:${client.name}`,
        externalId,
        amount: input.amount,
        paidAt: new Date(input.paidAt),
        formaPago: input.formaPago,
        ...(input.numOperacion ? { numOperacion: input.numOperacion } : {}),
        ...(input.tipoCambioP ? { tipoCambioP: input.tipoCambioP } : {}),
        strictRate: true,
      });
      const { installment, saldoAnterior, saldoInsoluto } = await installmentWithBalance(tx, recorded.installmentId);
      return {
        status: recorded.created ? 201 : 200,
        body: installmentView(
          installment,
          {
            saldoAnterior: saldoAnterior.toFixed(2),
            saldoInsoluto: saldoInsoluto.toFixed(2),
          },
          installment.pago!,
          recorded.waitingFor,
        ),
      };
    };
    await respondOnce(req, res, `/v1/invoices/${invoiceId}/payments`, input, create);
  };
}
