import { Router } from 'express';
import type { PrismaClient } from '@timbra/db';
import { listWebhookEvents } from '@timbra/db/webhook-events';
import { ApiError } from '../http/errors.ts';
import { encodeCursor, listParams } from '../http/lists.ts';

const RESULTS = ['accepted', 'ignored', 'failed'] as const;
const PROVIDERS = ['stripe', 'mercadopago'] as const;

/**
 * GET /v1/webhook-events (admin): the provider events received, newest first — `?result=failed`
 * lists the poison events (signed, but impossible to record) with their reasons; `provider`,
 * `limit` and `cursor` as elsewhere. The payload is included: it is what the provider sent.
 */
export function webhookEventRoutes(prisma: PrismaClient): Router {
  const router = Router();
  router.get('/webhook-events', async (req, res) => {
    const { limit, cursor } = listParams(req, ['result', 'provider']);
    const result = RESULTS.find((r) => r === req.query.result);
    const provider = PROVIDERS.find((p) => p === req.query.provider);
    const problems = [
      ...(req.query.result !== undefined && !result ? [{ path: 'result', message: RESULTS.join(', ') }] : []),
      ...(req.query.provider !== undefined && !provider ? [{ path: 'provider', message: PROVIDERS.join(', ') }] : []),
    ];
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    const rows = await listWebhookEvents(prisma, { result, provider }, { limit, cursor });
    const page = rows.slice(0, limit);
    res.json({
      data: page.map((e) => ({
        id: e.id,
        provider: e.provider,
        eventId: e.eventId,
        type: e.type,
        result: e.result,
        reason: e.reason,
        receivedAt: e.receivedAt.toISOString(),
        payload: e.payload,
      })),
      nextCursor:
        rows.length > limit && page.length > 0
          ? encodeCursor({ createdAt: page[page.length - 1]!.receivedAt, id: page[page.length - 1]!.id })
          : null,
    });
  });
  return router;
}
