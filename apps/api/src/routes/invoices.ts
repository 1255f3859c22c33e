import { Router } from 'express';
import { INVOICE_STATUSES, type PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';
import { listParams } from './payments.ts';
import { encodeCursor, invoiceSummary, invoiceView } from './views.ts';

export function invoiceRoutes(prisma: PrismaClient): Router {
  const router = Router();
  const find = async (id: string) => {
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw new ApiError('not_found');
    const invoice = await prisma.invoice.findUnique({
      where: { id },
      include: { outbox: { orderBy: { createdAt: 'asc' } }, attempts: { orderBy: { createdAt: 'asc' } } },
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

  router.get('/invoices', async (req, res) => {
    const { limit, cursor } = listParams(req);
    const status = req.query.status;
    if (
      status !== undefined &&
      (typeof status !== 'string' || !(INVOICE_STATUSES as readonly string[]).includes(status))
    ) {
      throw new ApiError('validation_failed', undefined, [
        { path: 'status', message: `one of ${INVOICE_STATUSES.join(', ')}` },
      ]);
    }
    const rows = await prisma.invoice.findMany({
      where: {
        ...(typeof status === 'string' ? { status } : {}),
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
