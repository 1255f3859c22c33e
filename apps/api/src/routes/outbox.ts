import { Router } from 'express';
import { redriveOutboxRow, type PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';

/** Admin operations on the outbox. */
export function outboxRoutes(prisma: PrismaClient): Router {
  const router = Router();

  /** Re-drives a dead letter: the row goes back to pending with its original frozen bytes. */
  router.post('/outbox/:id/retry', async (req, res) => {
    if (!req.client?.admin) throw new ApiError('forbidden');
    const id = String(req.params.id);
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw new ApiError('not_found');
    const result = await redriveOutboxRow(prisma, id);
    if (!result.ok) throw new ApiError(result.reason === 'not_found' ? 'not_found' : 'not_retryable');
    res.status(202).json({ outboxId: result.outboxId, invoiceId: result.invoiceId, status: 'pending' });
  });

  return router;
}
