/**
 * The delivery log (`GET /v1/deliveries`, one delivery with every attempt, an endpoint's deliveries),
 * replays, and an endpoint's test event. Emails are deliveries too: `?invoiceId=…` shows both.
 */
import { Router, type Request, type Response } from 'express';
import { isUuid, type PrismaClient } from '@timbra/db';
import {
  deliveryById,
  DELIVERY_STATUSES,
  endpointById,
  listDeliveries,
  replayDelivery,
  sendTestEvent,
} from '@timbra/db/deliveries';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { listParams, pageOf } from '../http/lists.ts';

export interface DeliveryRow {
  id: string;
  channel: string;
  eventId: string;
  endpointId: string | null;
  recipient: string | null;
  status: string;
  attempts: number;
  availableAt: Date;
  lastError: string | null;
  deliveredAt: Date | null;
  replayOf: string | null;
  requestedBy: string | null;
  createdAt: Date;
  event: { type: string; invoiceId: string | null; paymentId: string | null };
  log?: {
    attempt: number;
    outcome: string;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    createdAt: Date;
  }[];
}

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    channel: d.channel,
    eventId: d.eventId,
    eventType: d.event.type,
    invoiceId: d.event.invoiceId,
    paymentId: d.event.paymentId,
    endpointId: d.endpointId,
    recipient: d.recipient,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'pending' ? d.availableAt.toISOString() : null,
    lastError: d.lastError,
    deliveredAt: d.deliveredAt?.toISOString() ?? null,
    replayOf: d.replayOf,
    requestedBy: d.requestedBy,
    createdAt: d.createdAt.toISOString(),
    ...(d.log
      ? {
          log: d.log.map((l) => ({
            attempt: l.attempt,
            outcome: l.outcome,
            statusCode: l.statusCode,
            error: l.error,
            durationMs: l.durationMs,
            at: l.createdAt.toISOString(),
          })),
        }
      : {}),
  };
}

export function deliveryRoutes(deps: { prisma: PrismaClient }): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id');

  router.get('/webhook-endpoints/:id/deliveries', async (req, res) => {
    const id = String(req.params.id);
    if (!(await endpointById(prisma, id))) throw new ApiError('not_found');
    const { limit, cursor } = listParams(req);
    const rows = await listDeliveries(prisma, { endpointId: id }, { limit, cursor });
    res.json(pageOf(rows, limit, deliveryView));
  });

  /** Deliveries (emails and webhooks), newest first: by invoice, payment, endpoint, channel or status. */
  router.get('/deliveries', async (req, res) => {
    const { limit, cursor } = listParams(req, ['invoiceId', 'paymentId', 'endpointId', 'channel', 'status']);
    const q = (name: string) => (typeof req.query[name] === 'string' ? req.query[name] : undefined);
    const problems: { path: string; message: string }[] = [];
    for (const name of ['invoiceId', 'paymentId', 'endpointId'])
      if (q(name) !== undefined && !isUuid(q(name)!)) problems.push({ path: name, message: 'a UUID' });
    const channel = q('channel');
    if (channel !== undefined && channel !== 'email' && channel !== 'webhook')
      problems.push({ path: 'channel', message: 'email or webhook' });
    const status = DELIVERY_STATUSES.find((s) => s === q('status'));
    if (q('status') !== undefined && !status)
      problems.push({ path: 'status', message: `one of ${DELIVERY_STATUSES.join(', ')}` });
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    const filter = { invoiceId: q('invoiceId'), paymentId: q('paymentId'), endpointId: q('endpointId') };
    const rows = await listDeliveries(
      prisma,
      { ...filter, channel: channel as 'email' | 'webhook' | undefined, status },
      { limit, cursor },
    );
    res.json(pageOf(rows, limit, deliveryView));
  });

  /** One delivery with its log: every attempt, its outcome, the receiver's status code or the SMTP reply. */
  router.get('/deliveries/:id', async (req, res) => {
    const delivery = await deliveryById(prisma, String(req.params.id), { log: true });
    if (!delivery) throw new ApiError('not_found');
    res.json(deliveryView(delivery));
  });

  /** Sends the same event again to the same endpoint or address (202): a new delivery, same event id. */
  router.post('/deliveries/:id/replay', async (req: Request, res: Response) => {
    const replay = await replayDelivery(prisma, String(req.params.id), `api:${req.client!.name}`);
    if (!replay) throw new ApiError('not_found');
    if ('refused' in replay) throw new ApiError('endpoint_disabled');
    res.status(202).json(deliveryView((await deliveryById(prisma, replay.id))!));
  });

  /** A signed test event to this endpoint only (202, its delivery): a receiver checked before real events flow. */
  router.post('/webhook-endpoints/:id/test', async (req: Request, res: Response) => {
    const sent = await sendTestEvent(prisma, String(req.params.id), `api:${req.client!.name}`);
    if (!sent) throw new ApiError('not_found');
    if ('refused' in sent) throw new ApiError('endpoint_disabled');
    res.status(202).json(deliveryView((await deliveryById(prisma, sent.id))!));
  });

  return router;
}
