/** Cancelling a stamped invoice (`POST /v1/invoices/:id/cancel`) and the PAC's acuse once it answered. */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { cancelRequestById, cancelRequestOf } from '@timbra/db/invoices';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { idempotentResponder } from '../http/idempotency.ts';
import { validation } from '../http/lists.ts';
import { cancelRequestView } from '../http/views.ts';
import type { InvoiceRoutesDeps } from './invoice-routes.ts';
import { requestCancellation } from './request-cancellation.ts';

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

export function cancellationRoutes(deps: InvoiceRoutesDeps): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id', 'cancelId');
  const respondOnce = idempotentResponder(deps);

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

  return router;
}
