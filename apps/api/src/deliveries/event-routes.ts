/**
 * The outbound events (`GET /v1/events`, one by id): what the webhooks carry, in the same shape as a
 * delivery's body (`id`, `type`, `createdAt`, `apiVersion`, `data.object`), with the ids of the objects it is about.
 * A receiver that missed deliveries reads them here; retention keeps them as long as their deliveries.
 */
import { Router } from 'express';
import { isUuid, type PrismaClient } from '@timbra/db';
import { eventById, EVENT_TYPES, listEvents, TEST_EVENT_TYPE } from '@timbra/db/deliveries';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { listParams, pageOf } from '../http/lists.ts';

interface EventRow {
  id: string;
  type: string;
  invoiceId: string | null;
  paymentId: string | null;
  refundId: string | null;
  data: unknown;
  apiVersion: string;
  createdAt: Date;
}

export function eventView(e: EventRow) {
  return {
    id: e.id,
    type: e.type,
    createdAt: e.createdAt.toISOString(),
    apiVersion: e.apiVersion,
    data: { object: e.data },
    invoiceId: e.invoiceId,
    paymentId: e.paymentId,
    refundId: e.refundId,
  };
}

const OBJECT_FILTERS = ['invoiceId', 'paymentId', 'refundId'] as const;
const TYPES: readonly string[] = [...EVENT_TYPES, TEST_EVENT_TYPE];

export function eventRoutes(deps: { prisma: PrismaClient }): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id');

  /** Events newest first, by type and by the invoice, payment or refund they are about. */
  router.get('/events', async (req, res) => {
    const { limit, cursor } = listParams(req, ['type', ...OBJECT_FILTERS]);
    const q = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
    const problems: { path: string; message: string }[] = [];
    for (const name of OBJECT_FILTERS)
      if (q(name) !== undefined && !isUuid(q(name)!)) problems.push({ path: name, message: 'a UUID' });
    const type = q('type');
    if (type !== undefined && !TYPES.includes(type))
      problems.push({ path: 'type', message: `one of ${TYPES.join(', ')}` });
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    const rows = await listEvents(
      prisma,
      { type, invoiceId: q('invoiceId'), paymentId: q('paymentId'), refundId: q('refundId') },
      { limit, cursor },
    );
    res.json(pageOf(rows, limit, eventView));
  });

  router.get('/events/:id', async (req, res) => {
    const event = await eventById(prisma, String(req.params.id));
    if (!event) throw new ApiError('not_found');
    res.json(eventView(event));
  });

  return router;
}
