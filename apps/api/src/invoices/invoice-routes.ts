import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { rfcKind, type PdfOptions } from '@timbra/cfdi-core';
import { isUuid, type PrismaClient } from '@timbra/db';
import {
  correctionById,
  invoiceWithHistory,
  invoiceWithVersions,
  INVOICE_STATUSES,
  listInvoices,
  type InvoiceFilter,
} from '@timbra/db/invoices';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { listParams, metadataFilter, pageOf, validation } from '../http/lists.ts';
import { lineSchema } from '../catalog/catalog-schemas.ts';
import { correctInvoice, type CorrectInvoiceDeps } from './correct-invoice.ts';
import { replaceInvoice } from './replace-invoice.ts';
import { correctionView, invoiceSummary, invoiceView, problemView, versionsView } from '../http/views.ts';

export const correctInvoiceSchema = z
  .object({
    receptor: z
      .object({
        rfc: z.string().min(12).max(13),
        nombre: z.string().min(1).max(300),
        codigoPostal: z.string().regex(/^\d{5}$/, '5 digits'),
        regimenFiscal: z.string().regex(/^\d{3}$/, 'a c_RegimenFiscal code'),
        usoCfdi: z.string().regex(/^[A-Z]{1,2}\d{2}$/, 'a c_UsoCFDI code'),
      })
      .partial()
      .strict()
      .refine((r) => Object.keys(r).length > 0, 'give at least one field'),
    tipoCambio: z.string().regex(/^\d{1,12}(\.\d{1,6})?$/, 'a positive decimal with up to 6 decimals'),
    formaPago: z.string().regex(/^\d{2}$/, 'a c_FormaPago code'),
    concepto: z
      .object({
        claveProdServ: z.string().regex(/^\d{8}$/, '8 digits'),
        claveUnidad: z.string().min(1).max(3),
        descripcion: z.string().min(1).max(1000),
      })
      .partial()
      .strict(),
    /** An Ingreso's lines, all of them anew (as POST /v1/payments takes them). */
    conceptos: z.array(lineSchema).min(1).max(1000),
    reason: z.string().min(1).max(500),
  })
  .partial()
  .strict()
  // `{ reason }` alone re-freezes the same data with a fresh Fecha (a version past the PAC's window).
  .refine((c) => Object.keys(c).length > 0, 'give a field to correct, or a reason to re-freeze with a fresh Fecha');

export interface InvoiceRoutesDeps {
  prisma: PrismaClient;
  idempotencyTtlHours: number;
  metrics: Metrics;
  corrections: CorrectInvoiceDeps & { organizationId: string };
  /** How the PDFs are printed (fonts, the merchant's logo). */
  pdf: Omit<PdfOptions, 'cancelled'>;
}

/** An invoice with its history; 404 not_found when there is none. */
export async function findInvoice(prisma: PrismaClient, id: string) {
  const invoice = await invoiceWithHistory(prisma, id);
  if (!invoice) throw new ApiError('not_found');
  return invoice;
}

export function invoiceRoutes(deps: InvoiceRoutesDeps): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id', 'cancelId');
  const respondOnce = idempotentResponder(deps);
  const find = (id: string) => findInvoice(prisma, id);

  router.get('/invoices/:id', async (req, res) => {
    res.json(invoiceView(await find(String(req.params.id))));
  });

  /**
   * Corrects an invoice not stamped (needs_data, stamp_failed, or pending past its window): a new
   * version frozen under the same serie-folio — at once (200) when no PAC ever received the current
   * one, else after every PAC that did says it never stamped it (202: the correction is `proving`).
   */
  router.patch('/invoices/:id', async (req: Request, res: Response) => {
    const invoiceId = String(req.params.id);
    const parsed = correctInvoiceSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    await respondOnce(req, res, `/v1/invoices/${invoiceId}`, input, async (tx) => {
      const result = await correctInvoice(tx, deps.corrections, invoiceId, input, req.client!.name);
      if (result.kind === 'rejected')
        throw new ApiError('fiscal_rules_failed', undefined, result.problems.map(problemView));
      const correction = await correctionById(tx, result.correctionId);
      return { status: result.kind === 'applied' ? 200 : 202, body: correctionView(correction) };
    });
  });

  /**
   * Replaces a stamped Ingreso (201): a new invoice with the next folio, related with TipoRelacion 04,
   * stamped first; then the worker cancels the original with motivo 01 pointing at it.
   */
  router.post('/invoices/:id/replace', async (req: Request, res: Response) => {
    const invoiceId = String(req.params.id);
    const parsed = correctInvoiceSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    await respondOnce(req, res, `/v1/invoices/${invoiceId}/replace`, input, async (tx) => {
      const result = await replaceInvoice(tx, deps.corrections, invoiceId, input, req.client!.name);
      if (result.kind === 'rejected')
        throw new ApiError('fiscal_rules_failed', undefined, result.problems.map(problemView));
      const created = (await invoiceWithHistory(tx, result.invoiceId))!;
      return { status: 201, body: invoiceView(created) };
    });
  });

  /** Every version of the invoice's frozen document, oldest first, with why and by whom each was frozen. */
  router.get('/invoices/:id/versions', async (req, res) => {
    const invoice = await invoiceWithVersions(prisma, String(req.params.id));
    if (!invoice) throw new ApiError('not_found');
    res.json(versionsView(invoice));
  });

  router.get('/invoices', async (req, res) => {
    const { limit, cursor } = listParams(req, INVOICE_FILTERS);
    const rows = await listInvoices(prisma, invoiceFilter(req), { limit, cursor });
    res.json(
      pageOf(rows, limit, (i) => ({
        ...invoiceSummary(i),
        paymentId: i.paymentId,
        receptor: receptorOf(i.payment?.receptor),
        metadata: i.metadata,
        createdAt: i.createdAt.toISOString(),
      })),
    );
  });
  return router;
}

const INVOICE_FILTERS = [
  'status',
  'externalId',
  'uuid',
  'serieFolio',
  'rfc',
  'customerId',
  'createdFrom',
  'createdTo',
  'metadata',
] as const;

/** A serie-folio as printed: the serie (any characters but the last hyphen's), a hyphen, the folio. */
const SERIE_FOLIO = /^(.{0,25})-(\d{1,10})$/;

/** GET /v1/invoices's filters, each checked (422 naming every malformed one). */
function invoiceFilter(req: Request): InvoiceFilter {
  const q = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
  const problems: { path: string; message: string }[] = [];
  const status = INVOICE_STATUSES.find((s) => s === q('status'));
  if (q('status') !== undefined && !status)
    problems.push({ path: 'status', message: `one of ${INVOICE_STATUSES.join(', ')}` });
  const serieFolio = q('serieFolio') === undefined ? undefined : SERIE_FOLIO.exec(q('serieFolio')!);
  if (serieFolio === null) problems.push({ path: 'serieFolio', message: 'a serie and folio, e.g. A-12' });
  const rfc = q('rfc')?.toUpperCase();
  if (rfc !== undefined && rfcKind(rfc) === null)
    problems.push({ path: 'rfc', message: 'an RFC of 12 or 13 characters' });
  const customerId = q('customerId');
  if (customerId !== undefined && !isUuid(customerId)) problems.push({ path: 'customerId', message: 'a UUID' });
  const instant = (name: string) => {
    const given = q(name);
    if (given === undefined) return undefined;
    const at = new Date(given);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(given) || Number.isNaN(at.getTime()))
      problems.push({ path: name, message: 'a date-time with its offset, e.g. 2026-12-01T00:00:00-06:00' });
    return at;
  };
  const createdFrom = instant('createdFrom');
  const createdTo = instant('createdTo');
  if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
  return {
    status,
    externalId: q('externalId'),
    uuid: q('uuid')?.toUpperCase(),
    metadata: metadataFilter(req),
    ...(serieFolio ? { serie: serieFolio[1], folio: Number(serieFolio[2]) } : {}),
    rfc,
    customerId,
    createdFrom,
    createdTo,
  };
}

/** The receptor's RFC and name a payment recorded; null for público en general. */
function receptorOf(receptor: unknown): { rfc: string; nombre: string } | null {
  if (!receptor || typeof receptor !== 'object') return null;
  const { rfc, nombre } = receptor as { rfc?: unknown; nombre?: unknown };
  return typeof rfc === 'string' ? { rfc, nombre: typeof nombre === 'string' ? nombre : '' } : null;
}
