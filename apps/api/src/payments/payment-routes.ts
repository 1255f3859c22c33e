import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { catalogs, parseAmount, rfcKind } from '@timbra/cfdi-core';
import { amountSchema, metadataSchema, printable, storableText } from '../http/schemas.ts';
import { newMetadata, type PrismaClient } from '@timbra/db';
import { listPayments, paymentWithInvoices } from '@timbra/db/payments';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { ingresoProblems, recordPayment, type RecordPaymentDeps } from './record-payment.ts';
import { namedReceptor, type PaymentFacts, type ReceptorInput } from './build-ingreso.ts';
import { isTicketSale } from '../tickets/record-tickets.ts';
import type { ExchangeRateSource } from './exchange-rates.ts';
import { lineSchema, rfcCheckDigitProblem } from '../catalog/catalog-schemas.ts';
import { prepareSale } from './sale.ts';
import { paymentView, problemView } from '../http/views.ts';
import { listParams, metadataFilter, pageOf, validation } from '../http/lists.ts';

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
    /** The merchant's own strings (an order number, a store): kept on the payment, never in the CFDI. */
    metadata: metadataSchema.optional(),
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
      metadata: newMetadata(input.metadata),
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

  router.get('/payments/:id', async (req, res) => {
    const id = String(req.params.id);
    const payment = await paymentWithInvoices(deps.prisma, id);
    if (!payment) throw new ApiError('not_found');
    res.json(paymentView(payment, payment.invoices));
  });

  router.get('/payments', async (req, res) => {
    const { limit, cursor } = listParams(req, ['externalId', 'provider', 'uuid', 'metadata']);
    const q = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
    // By the provider's (or your) id, an invoice's SAT UUID (folio fiscal), and metadata.
    const uuid = q('uuid')?.toUpperCase();
    const filter = { externalId: q('externalId'), provider: q('provider'), uuid, metadata: metadataFilter(req) };
    const rows = await listPayments(deps.prisma, filter, { limit, cursor });
    res.json(pageOf(rows, limit, (p) => paymentView(p, p.invoices)));
  });

  return router;
}

/** The receptor as a payment stores it: the request's fields but the flag that only asked to accept it. */
function receptorOf(given: z.output<typeof createPaymentSchema>['receptor']): ReceptorInput | null {
  if (!given) return null;
  const { acceptCheckDigitMismatch: _accepted, ...receptor } = given;
  return receptor;
}
