/**
 * Metadata changes of the objects that have no other PATCH of their own: a payment (whose money and
 * fiscal data are what was recorded) and an invoice (whose PATCH corrects its CFDI). Keys given are
 * set, a key given "" is removed (@timbra/db metadata.ts); a customer's is changed with its fields.
 */
import { Router } from 'express';
import { changeMetadata, type PrismaClient } from '@timbra/db';
import { paymentWithInvoices } from '@timbra/db/payments';
import { findInvoice } from '../invoices/invoice-routes.ts';
import { uuidParams } from './ids.ts';
import { changed, validation } from './lists.ts';
import { metadataChangeSchema } from './schemas.ts';
import { invoiceView, paymentView } from './views.ts';

export function metadataRoutes(prisma: PrismaClient): Router {
  const router = Router();
  uuidParams(router, 'id');
  const change = (req: { body: unknown }) => {
    const parsed = metadataChangeSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    return parsed.data.metadata;
  };

  router.patch('/payments/:id', async (req, res) => {
    const id = String(req.params.id);
    changed(await changeMetadata(prisma, 'payments', id, change(req)));
    const payment = (await paymentWithInvoices(prisma, id))!;
    res.json(paymentView(payment, payment.invoices));
  });

  router.patch('/invoices/:id/metadata', async (req, res) => {
    const id = String(req.params.id);
    changed(await changeMetadata(prisma, 'invoices', id, change(req)));
    res.json(invoiceView(await findInvoice(prisma, id)));
  });

  return router;
}
