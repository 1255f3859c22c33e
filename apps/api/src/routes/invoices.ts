import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { INVOICE_STATUSES, type PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import type { Metrics } from '../http/metrics.ts';
import { requestCancellation } from '../use-cases/request-cancellation.ts';
import { listParams, validation } from './payments.ts';
import { cancelRequestView, encodeCursor, invoiceSummary, invoiceView } from './views.ts';

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

export interface InvoiceRoutesDeps {
  prisma: PrismaClient;
  idempotencyTtlHours: number;
  metrics: Metrics;
}

export function invoiceRoutes(deps: InvoiceRoutesDeps): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id', 'cancelId');
  const respondOnce = idempotentResponder(deps);
  const find = async (id: string) => {
    const invoice = await prisma.invoice.findUnique({
      where: { id },
      include: {
        outbox: { orderBy: { createdAt: 'asc' } },
        attempts: { orderBy: { createdAt: 'asc' } },
        cancelRequests: { orderBy: { createdAt: 'asc' } },
      },
    });
    if (!invoice) throw new ApiError('not_found');
    return invoice;
  };

  router.get('/invoices/:id', async (req, res) => {
    res.json(invoiceView(await find(String(req.params.id))));
  });

  /** The stamped XML once stamped, else the frozen one; `X-Timbra-Xml` says which. */
  router.get('/invoices/:id/xml', async (req, res) => {
    const invoice = await find(String(req.params.id));
    const xml = invoice.stampedXml ?? invoice.frozenXml;
    if (!xml) throw new ApiError('not_found', 'This invoice has no XML yet (it needs data).');
    res.set('X-Timbra-Xml', invoice.stampedXml ? 'stamped' : 'frozen');
    res.type('application/xml; charset=utf-8').send(xml);
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
      return { status: 202, body: cancelRequestView(await tx.cancelRequest.findUniqueOrThrow({ where: { id } })) };
    });
  });

  /** The acuse de cancelación the PAC returned for a cancellation request (XML), once it has one. */
  router.get('/invoices/:id/cancellations/:cancelId/acuse', async (req, res) => {
    const [id, cancelId] = [String(req.params.id), String(req.params.cancelId)];
    if (!UUID.test(id) || !UUID.test(cancelId)) throw new ApiError('not_found');
    const request = await prisma.cancelRequest.findFirst({ where: { id: cancelId, invoiceId: id } });
    if (!request) throw new ApiError('not_found');
    if (!request.acuse) throw new ApiError('not_found', 'The PAC has not answered this cancellation request yet.');
    res.type('application/xml; charset=utf-8').send(request.acuse);
  });

  router.get('/invoices', async (req, res) => {
    const { limit, cursor } = listParams(req);
    const status = INVOICE_STATUSES.find((s) => s === req.query.status);
    if (req.query.status !== undefined && !status) {
      throw new ApiError('validation_failed', undefined, [
        { path: 'status', message: `one of ${INVOICE_STATUSES.join(', ')}` },
      ]);
    }
    const rows = await prisma.invoice.findMany({
      where: {
        ...(status ? { status } : {}),
        ...(cursor
          ? { OR: [{ createdAt: { lt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { lt: cursor.id } }] }
          : {}),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    res.json({
      data: page.map((i) => ({ ...invoiceSummary(i), paymentId: i.paymentId, createdAt: i.createdAt.toISOString() })),
      nextCursor: rows.length > limit && page.length > 0 ? encodeCursor(page[page.length - 1]!) : null,
    });
  });
  return router;
}
