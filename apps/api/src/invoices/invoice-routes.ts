import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import {
  customerCopy,
  customerCopyZip,
  documentFileName,
  type PdfOptions,
  type StampedDocument,
} from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { resendInvoiceEmail } from '@timbra/db/deliveries';
import {
  cancelRequestById,
  cancelRequestOf,
  correctionById,
  invoiceExists,
  invoiceWithHistory,
  invoiceWithVersions,
  INVOICE_STATUSES,
  listInvoices,
} from '@timbra/db/invoices';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { requestCancellation } from './request-cancellation.ts';
import { listParams, pageOf, validation } from '../http/lists.ts';
import { lineSchema } from '../payments/sale.ts';
import { correctInvoice, replaceInvoice, type CorrectInvoiceDeps } from './correct-invoice.ts';
import {
  cancelRequestView,
  correctionView,
  invoiceSummary,
  invoiceView,
  problemView,
  versionsView,
} from '../http/views.ts';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const cancelInvoiceSchema = z
  .object({
    /** 01 with a substitute, 02 with errors and no substitute, 03 the operation did not happen, 04 nominativa in a global. */
    motivo: z.enum(['01', '02', '03', '04']),
    folioSustitucion: z.string().regex(UUID, 'a UUID').optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.motivo === '01' && !c.folioSustitucion)
      ctx.addIssue({ code: 'custom', path: ['folioSustitucion'], message: 'is required with motivo 01' });
    if (c.motivo !== '01' && c.folioSustitucion)
      ctx.addIssue({ code: 'custom', path: ['folioSustitucion'], message: 'only applies to motivo 01' });
  });

/** POST /v1/invoices/:id/email: to another address than the payment's, optionally. */
export const resendEmailSchema = z.object({ to: z.email().max(254).optional() }).strict();

/** PATCH /v1/invoices/:id: what a correction may change (at least one field). */
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
  corrections: CorrectInvoiceDeps & { emisorId: string };
  /** How the PDFs are printed (fonts, the merchant's logo). */
  pdf: Omit<PdfOptions, 'cancelled'>;
}

export function invoiceRoutes(deps: InvoiceRoutesDeps): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id', 'cancelId');
  const respondOnce = idempotentResponder(deps);
  const find = async (id: string) => {
    const invoice = await invoiceWithHistory(prisma, id);
    if (!invoice) throw new ApiError('not_found');
    return invoice;
  };

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

  /** The stamped XML once stamped, else the frozen one; `X-Timbra-Xml` says which. */
  router.get('/invoices/:id/xml', async (req, res) => {
    const invoice = await find(String(req.params.id));
    const xml = invoice.stampedXml ?? invoice.frozenXml;
    if (!xml) throw new ApiError('not_found', 'This invoice has no XML yet (it needs data).');
    res.set('X-Timbra-Xml', invoice.stampedXml ? 'stamped' : 'frozen');
    // A download keeps the name the customer's copy has; a document not stamped yet says so in its name.
    const name =
      invoice.stampedXml && invoice.uuid
        ? documentFileName({ serie: invoice.serie, folio: invoice.folio, uuid: invoice.uuid }, 'xml')
        : `${invoice.serie}-${invoice.folio}-sin-timbrar.xml`;
    res.set('Content-Disposition', `attachment; filename="${name}"`);
    res.type('application/xml; charset=utf-8').send(xml);
  });

  const pdfOptions = deps.pdf;
  /** A stamped invoice as the customer's copy is made from it; 409 not_stamped before its stamp. */
  const stampedDocument = async (id: string): Promise<StampedDocument> => {
    const invoice = await find(id);
    if (!invoice.stampedXml || !invoice.uuid) throw new ApiError('not_stamped');
    return {
      serie: invoice.serie,
      folio: invoice.folio,
      uuid: invoice.uuid,
      stampedXml: invoice.stampedXml,
      cancelled: invoice.status === 'cancelled',
    };
  };

  /**
   * The representación impresa of a stamped invoice (PDF, from its stamped XML alone), with
   * "CANCELADO" across it once cancelled; file name `<serie>-<folio>-<UUID>.pdf`.
   */
  router.get('/invoices/:id/pdf', async (req, res) => {
    const copy = await customerCopy(await stampedDocument(String(req.params.id)), pdfOptions);
    res
      .type('application/pdf')
      .set('Content-Disposition', `inline; filename="${copy.pdf.filename}"`)
      .send(copy.pdf.content);
  });

  /** The stamped XML and its PDF in one ZIP, `<serie>-<folio>-<UUID>.zip` (the email's attachments). */
  router.get('/invoices/:id/zip', async (req, res) => {
    const doc = await stampedDocument(String(req.params.id));
    const zip = customerCopyZip(await customerCopy(doc, pdfOptions));
    res
      .type('application/zip')
      .set('Content-Disposition', `attachment; filename="${documentFileName(doc, 'zip')}"`)
      .send(zip);
  });

  /**
   * Emails the customer's copy again (202): the latest of its stamped/cancelled messages, to `to` or
   * to the payment's address. A new delivery with its own Message-ID; `GET /v1/deliveries/:id` follows it.
   */
  router.post('/invoices/:id/email', async (req: Request, res: Response) => {
    const invoiceId = String(req.params.id);
    const parsed = resendEmailSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    await respondOnce(req, res, `/v1/invoices/${invoiceId}/email`, input, async (tx) => {
      if (!(await invoiceExists(tx, invoiceId))) throw new ApiError('not_found');
      const sent = await resendInvoiceEmail(tx, invoiceId, {
        ...(input.to ? { to: input.to } : {}),
        by: `api:${req.client!.name}`,
      });
      if ('refused' in sent) throw new ApiError(sent.refused === 'no_event' ? 'not_stamped' : 'no_email_address');
      return {
        status: 202,
        body: { deliveryId: sent.id, to: sent.recipient, message: sent.eventType, status: 'pending' },
      };
    });
  });

  /**
   * Requests the cancellation of a stamped invoice (202): the worker sends it to the PAC and follows
   * it at the SAT until final; `GET /v1/invoices/:id` shows where it stands.
   */
  router.post('/invoices/:id/cancel', async (req: Request, res: Response) => {
    const invoiceId = String(req.params.id);
    const parsed = cancelInvoiceSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const input = parsed.data;
    await respondOnce(req, res, `/v1/invoices/${invoiceId}/cancel`, input, async (tx) => {
      const id = await requestCancellation(tx, { invoiceId, ...input });
      return { status: 202, body: cancelRequestView(await cancelRequestById(tx, id)) };
    });
  });

  /** The acuse de cancelación the PAC returned for a cancellation request (XML), once it has one. */
  router.get('/invoices/:id/cancellations/:cancelId/acuse', async (req, res) => {
    const [id, cancelId] = [String(req.params.id), String(req.params.cancelId)];
    if (!UUID.test(id) || !UUID.test(cancelId)) throw new ApiError('not_found');
    const request = await cancelRequestOf(prisma, id, cancelId);
    if (!request) throw new ApiError('not_found');
    if (!request.acuse) throw new ApiError('not_found', 'The PAC has not answered this cancellation request yet.');
    res.type('application/xml; charset=utf-8').send(request.acuse);
  });

  router.get('/invoices', async (req, res) => {
    const { limit, cursor } = listParams(req, ['status', 'externalId', 'uuid']);
    const status = INVOICE_STATUSES.find((s) => s === req.query.status);
    if (req.query.status !== undefined && !status) {
      throw new ApiError('validation_failed', undefined, [
        { path: 'status', message: `one of ${INVOICE_STATUSES.join(', ')}` },
      ]);
    }
    const externalId = typeof req.query.externalId === 'string' ? req.query.externalId : undefined;
    const uuid = typeof req.query.uuid === 'string' ? req.query.uuid.toUpperCase() : undefined;
    const rows = await listInvoices(prisma, { status, externalId, uuid }, { limit, cursor });
    res.json(
      pageOf(rows, limit, (i) => ({
        ...invoiceSummary(i),
        paymentId: i.paymentId,
        createdAt: i.createdAt.toISOString(),
      })),
    );
  });
  return router;
}
