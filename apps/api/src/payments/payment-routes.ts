import { randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { catalogs, isBlank, parseAmount, rfcKind } from '@timbra/cfdi-core';
import { isStorableText, type PrismaClient } from '@timbra/db';
import {
  installmentWithBalance,
  listPayments,
  paymentExists,
  paymentWithInvoices,
  refundWithEgreso,
} from '@timbra/db/payments';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { ingresoProblems, recordPayment, type RecordPaymentDeps } from './record-payment.ts';
import { namedReceptor, type PaymentFacts, type ReceptorInput } from './build-ingreso.ts';
import { recordInstallment } from '../refunds-installments/record-installment.ts';
import { recordRefund } from '../refunds-installments/record-refund.ts';
import { isTicketSale } from '../tickets/tickets.ts';
import type { ExchangeRateSource } from './exchange-rates.ts';
import { lineSchema, prepareSale, rfcCheckDigitProblem } from './sale.ts';
import { installmentView, paymentView, problemView, refundView } from '../http/views.ts';
import { listParams, pageOf, validation } from '../http/lists.ts';

const printable = (max: number) =>
  z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), `1–${max} printable ASCII characters`);

/** Text a column can store (no U+0000, no lone surrogate: Postgres refuses both). */
const storableText = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine(isStorableText, 'no NUL character or lone surrogate')
    // Only NBSP, zero-width or other invisible characters would print blank: refused like empty.
    .refine((v) => !isBlank(v), 'has no visible character (only spaces or invisible ones)');

/** The money grammar (cfdi-core parseAmount), as a string; the payment's currency narrows the decimals. */
const amountSchema = z.string().superRefine((a, ctx) => {
  const parsed = parseAmount(a, 'MXN');
  if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.problem.message });
});

export const createPaymentSchema = z
  .object({
    externalId: printable(128),
    amount: amountSchema,
    currency: z
      .string()
      .refine((c) => Object.hasOwn(catalogs.MONEDA, c) && c !== 'XXX', 'a supported currency (c_Moneda)'),
    occurredAt: z.iso.datetime({ offset: true }),
    description: storableText(1, 1000).optional(),
    formaPago: z
      .string()
      .refine((f) => Object.hasOwn(catalogs.FORMA_PAGO, f) && f !== '99', 'a c_FormaPago code other than 99')
      .optional(),
    /**
     * The customer's fiscal data. Público en general written out (XAXX010101000, PUBLICO EN GENERAL)
     * is the same as leaving it out; a foreign customer is XEXX010101000 with residenciaFiscal.
     */
    receptor: z
      .object({
        rfc: z.string().refine((r) => rfcKind(r) !== null, 'an RFC (12 or 13 characters)'),
        nombre: storableText(1, 300),
        regimenFiscal: z.string().regex(/^\d{3}$/),
        codigoPostal: z.string().regex(/^\d{5}$/),
        usoCfdi: z.string().regex(/^[A-Z]{1,2}\d{2}$/),
        /** A foreign receptor's country (c_Pais, not MEX) and its tax id there. */
        residenciaFiscal: z
          .string()
          .refine((p) => catalogs.C_PAIS.has(p) && p !== 'MEX', 'a c_Pais code other than MEX')
          .optional(),
        numRegIdTrib: storableText(1, 40).optional(),
        /** Some RFCs the SAT issued do not match their own check digit: set to accept one anyway. */
        acceptCheckDigitMismatch: z.boolean().optional(),
      })
      .strict()
      .superRefine((r, ctx) => {
        const checkDigit = rfcCheckDigitProblem(r.rfc, r.acceptCheckDigitMismatch);
        if (checkDigit) ctx.addIssue({ code: 'custom', path: ['rfc'], message: checkDigit });
        if (r.numRegIdTrib !== undefined && r.residenciaFiscal === undefined)
          ctx.addIssue({ code: 'custom', path: ['residenciaFiscal'], message: 'required with numRegIdTrib' });
      })
      .optional(),
    /** `installments`: the sale is paid later (PPD Ingreso); each amount received is POSTed to /v1/invoices/:id/payments. */
    paymentTerms: z.enum(['single', 'installments']).optional(),
    /** The sale's lines (products or inline); their prices with taxes must add up to `amount`. Absent: one concepto. */
    conceptos: z.array(lineSchema).min(1).max(1000).optional(),
    /** A customer (POST /v1/customers): its fiscal data is the receptor's. Not with `receptor`. */
    customerId: z.string().min(1).max(64).optional(),
    /** Where the customer's copy (XML + PDF) is emailed once stamped, and again if cancelled. Default: the customer's. */
    email: z.email().max(254).optional(),
    /** TipoCambio of a sale in another currency than MXN (pesos per unit, up to 6 decimals). */
    tipoCambio: z
      .string()
      .regex(/^\d{1,12}(\.\d{1,6})?$/, 'a positive decimal with up to 6 decimals')
      .refine((t) => Number(t) > 0, 'greater than 0')
      .optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.receptor && p.customerId !== undefined)
      ctx.addIssue({ code: 'custom', path: ['customerId'], message: 'either receptor or customerId, not both' });
    if (p.tipoCambio !== undefined && p.currency === 'MXN')
      ctx.addIssue({ code: 'custom', path: ['tipoCambio'], message: 'only for a currency other than MXN' });
    const inCurrency = Object.hasOwn(catalogs.MONEDA, p.currency) ? parseAmount(p.amount, p.currency) : undefined;
    if (inCurrency && !inCurrency.ok)
      ctx.addIssue({ code: 'custom', path: ['amount'], message: inCurrency.problem.message });
    if (p.paymentTerms !== 'installments') return;
    if (!namedReceptor(p.receptor) && p.customerId === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['receptor'],
        message: 'is required for installments (its Pagos name the customer)',
      });
    if (p.formaPago !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['formaPago'],
        message: 'not with installments: the Ingreso says 99, each installment its own',
      });
  });

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

export interface PaymentRoutesDeps {
  prisma: PrismaClient;
  payments: RecordPaymentDeps;
  /** Exchange rates for sales in other currencies (EXCHANGE_RATE_SOURCE); undefined: none. */
  rates: ExchangeRateSource | undefined;
  defaultFormaPago: string;
  idempotencyTtlHours: number;
  metrics: Metrics;
}

type Tx = Parameters<Parameters<PrismaClient['$transaction']>[0]>[0];

export function paymentRoutes(deps: PaymentRoutesDeps): Router {
  const router = Router();
  uuidParams(router, 'id');

  const respondOnce = idempotentResponder(deps);

  router.post('/payments', async (req: Request, res: Response) => {
    const client = req.client!;
    const parsed = createPaymentSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    // Each API client has its own namespace of external ids.
    const provider = `api:${client.name}`;

    const given: PaymentFacts = {
      provider,
      externalId: input.externalId,
      amount: input.amount,
      currency: input.currency,
      occurredAt: new Date(input.occurredAt),
      receptor: namedReceptor(receptorOf(input.receptor)),
      description: input.description ?? null,
      formaPago: input.paymentTerms === 'installments' ? '99' : (input.formaPago ?? deps.defaultFormaPago),
      paymentTerms: input.paymentTerms ?? 'single',
      email: input.email ?? null,
    };
    const create = async (tx: Tx) => {
      // The lines' products, the customer, the TipoCambio: each refused with its code if wrong.
      const facts = await prepareSale(
        { prisma: tx, settings: deps.payments.settings, rates: deps.rates },
        given,
        {
          lines: input.conceptos,
          customer: input.customerId !== undefined ? { id: input.customerId } : undefined,
          tipoCambio: input.tipoCambio ? { rate: input.tipoCambio, source: 'request' } : undefined,
        },
        'strict',
      );
      // Before any row or folio: a REST caller can fix its data, so a CFDI that would break a SAT
      // rule is refused (a webhook's money is recorded anyway, its invoice in needs_data).
      // A ticket (global mode) has no Ingreso of its own: its global is checked when issued.
      const problems =
        deps.payments.global && isTicketSale(facts, deps.payments.settings)
          ? []
          : ingresoProblems(deps.payments, facts, new Date());
      if (problems.length > 0) throw new ApiError('fiscal_rules_failed', undefined, problems.map(problemView));
      const recorded = await recordPayment(tx, deps.payments, facts, client.id);
      const payment = (await paymentWithInvoices(tx, recorded.paymentId))!;
      if (!recorded.created && (!payment.amount.equals(input.amount) || payment.currency !== input.currency)) {
        throw new ApiError('payment_conflict');
      }
      // The request's log line names the payment it recorded (app.ts requestLogProps).
      res.locals.paymentId = payment.id;
      return { status: recorded.created ? 201 : 200, body: paymentView(payment, payment.invoices) };
    };

    await respondOnce(req, res, '/v1/payments', input, create);
  });

  /**
   * A refund of a payment (partial refunds allowed; never more than paid in all) and its Egreso,
   * frozen now if the Ingreso is stamped, else once it is.
   */
  router.post('/payments/:id/refunds', async (req: Request, res: Response) => {
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
  });

  /**
   * An amount received against a PPD Ingreso (sold in installments) and its Pago (complemento de
   * pago 2.0), frozen now if the Ingreso is stamped, else once it is.
   */
  router.post('/invoices/:id/payments', async (req: Request, res: Response) => {
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
  });

  router.get('/payments/:id', async (req, res) => {
    const id = String(req.params.id);
    const payment = await paymentWithInvoices(deps.prisma, id);
    if (!payment) throw new ApiError('not_found');
    res.json(paymentView(payment, payment.invoices));
  });

  router.get('/payments', async (req, res) => {
    const { limit, cursor } = listParams(req, ['externalId', 'provider', 'uuid']);
    const q = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
    // By the provider's (or your) id, and by an invoice's SAT UUID (folio fiscal).
    const externalId = q('externalId');
    const provider = q('provider');
    const uuid = q('uuid')?.toUpperCase();
    const rows = await listPayments(deps.prisma, { externalId, provider, uuid }, { limit, cursor });
    res.json(pageOf(rows, limit, (p) => paymentView(p, p.invoices)));
  });

  return router;
}

/**
 * A creating request that names no id of its own (`externalId`) must carry an Idempotency-Key: with
 * neither, a client's retry after a timeout would record the refund (installment) twice.
 *
 * @throws ApiError idempotency_required (400)
 */
function requireIdempotency(req: Request, externalId: string | undefined): void {
  if (externalId === undefined && !req.get('idempotency-key')) throw new ApiError('idempotency_required');
}

/** The receptor as a payment stores it: the request's fields but the flag that only asked to accept it. */
function receptorOf(given: z.output<typeof createPaymentSchema>['receptor']): ReceptorInput | null {
  if (!given) return null;
  const { acceptCheckDigitMismatch: _accepted, ...receptor } = given;
  return receptor;
}
