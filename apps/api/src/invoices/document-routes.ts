/**
 * An invoice's documents: its XML (stamped, else frozen), the PDF and the ZIP its customer receives,
 * and the email sent again.
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { customerCopy, customerCopyZip, documentFileName, stampedXmlOf, type StampedDocument } from '@timbra/cfdi-core';
import { resendInvoiceEmail } from '@timbra/db/deliveries';
import { invoiceExists } from '@timbra/db/invoices';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import { validation } from '../http/lists.ts';
import { findInvoice, type InvoiceRoutesDeps } from './invoice-routes.ts';

export const resendEmailSchema = z.object({ to: z.email().max(254).optional() }).strict();

/** PATCH /v1/invoices/:id: what a correction may change (at least one field). */

export function invoiceDocumentRoutes(deps: InvoiceRoutesDeps): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id');
  const respondOnce = idempotentResponder(deps);
  const find = (id: string) => findInvoice(prisma, id);

  router.get('/invoices/:id/xml', async (req, res) => sendXml(res, await find(String(req.params.id))));

  const pdfOptions = deps.pdf;
  const stampedDocument = (id: string) => stampedDocumentOf(prisma, id);

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

  return router;
}

/** The stamped XML once stamped, else the frozen one; `X-Timbra-Xml` says which. */
function sendXml(res: Response, invoice: Awaited<ReturnType<typeof findInvoice>>): void {
  const stamped = stampedXmlOf(invoice);
  const xml = stamped ?? invoice.frozenXml;
  if (!xml) throw new ApiError('not_found', 'This invoice has no XML yet (it needs data).');
  res.set('X-Timbra-Xml', stamped ? 'stamped' : 'frozen');
  // A download keeps the name the customer's copy has; a document not stamped yet says so in its name.
  const name =
    stamped && invoice.uuid
      ? documentFileName({ serie: invoice.serie, folio: invoice.folio, uuid: invoice.uuid }, 'xml')
      : `${invoice.serie}-${invoice.folio}-sin-timbrar.xml`;
  res.set('Content-Disposition', `attachment; filename="${name}"`);
  res.type('application/xml; charset=utf-8').send(xml);
}

/** A stamped invoice as the customer's copy is made from it; 409 not_stamped before its stamp. */
async function stampedDocumentOf(prisma: InvoiceRoutesDeps['prisma'], id: string): Promise<StampedDocument> {
  const invoice = await findInvoice(prisma, id);
  const stampedXml = stampedXmlOf(invoice);
  if (!stampedXml || !invoice.uuid) throw new ApiError('not_stamped');
  return {
    serie: invoice.serie,
    folio: invoice.folio,
    uuid: invoice.uuid,
    stampedXml,
    cancelled: invoice.status === 'cancelled',
  };
}
