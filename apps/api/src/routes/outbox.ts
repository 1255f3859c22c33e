import { Router } from 'express';
import { redriveOutboxRow, type PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';
import { uuidParams } from '../http/ids.ts';

/** Admin operations on the outbox. */
export function outboxRoutes(prisma: PrismaClient): Router {
  const router = Router();
  uuidParams(router, 'id');

  /** Re-drives a dead letter: the row goes back to pending with its original frozen bytes. */
  router.post('/outbox/:id/retry', async (req, res) => {
    const id = String(req.params.id);
    const result = await redriveOutboxRow(prisma, id);
    if (!result.ok) throw new ApiError(result.reason === 'not_found' ? 'not_found' : 'not_retryable');
    res.status(202).json({ outboxId: result.outboxId, invoiceId: result.invoiceId, status: 'pending' });
  });

  return router;
}
