import { Router } from 'express';
import { z } from 'zod';
import type { PrismaClient } from '@timbra/db';
import { redriveDeadLetter, type DeadLetterQueue } from '@timbra/db/outbox';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { validation } from '../http/lists.ts';

const redriveSchema = z
  .object({
    reason: z.string().trim().min(1).max(500).optional(),
    /** Resend bytes a PAC refused for good (permanent_rejection otherwise). */
    force: z.boolean().optional(),
  })
  .strict();

/** Admin operations on the outbox. `dlq`: the stamp-dlq queue, whose letter a re-drive settles. */
export function outboxRoutes(prisma: PrismaClient, dlq?: DeadLetterQueue): Router {
  const router = Router();
  uuidParams(router, 'id');

  /**
   * Re-drives a dead letter: the row goes back to pending with its original frozen bytes, recorded
   * (who: this key; why: `reason`) in the invoice's history.
   */
  router.post('/outbox/:id/retry', async (req, res) => {
    const id = String(req.params.id);
    const body = redriveSchema.safeParse(req.body ?? {});
    if (!body.success) throw validation(body.error);
    const result = await redriveDeadLetter(
      prisma,
      id,
      { by: `api:${req.client!.name}`, reason: body.data.reason, force: body.data.force },
      dlq,
    );
    if (!result.ok && result.reason === 'permanent_rejection')
      throw new ApiError('permanent_rejection', undefined, {
        invoiceId: result.invoiceId,
        lastError: result.lastError,
      });
    if (!result.ok) throw new ApiError(result.reason === 'not_found' ? 'not_found' : 'not_retryable');
    res.status(202).json({ outboxId: result.outboxId, invoiceId: result.invoiceId, status: 'pending' });
  });

  return router;
}
