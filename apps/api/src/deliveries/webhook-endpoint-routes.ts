/**
 * The merchant's webhook endpoints (admin keys: they receive every customer's data) and the delivery
 * log. Register an endpoint (its signing secret shown once), list, change, enable or disable it; read
 * its deliveries with every attempt; replay any delivery. Emails are deliveries too: `GET
 * /v1/deliveries?invoiceId=…` shows both. docs/webhooks.md tells a receiver how to verify and dedupe.
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { PrismaClient } from '@timbra/db';
import {
  deliveryById,
  DELIVERY_STATUSES,
  endpointById,
  insertEndpoint,
  listDeliveries,
  listEndpoints,
  updateEndpoint,
  endpointAddressProblem,
  EVENT_TYPES,
  newEndpointSecret,
  replayDelivery,
  rotateEndpointSecret,
  setEndpointStatus,
} from '@timbra/db/deliveries';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { listParams, pageOf, validation } from '../http/lists.ts';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An endpoint's URL: https, or http to this machine (or anywhere with WEBHOOK_ALLOW_HTTP). No credentials in it. */
function endpointUrl(allowHttp: boolean) {
  return z
    .url()
    .max(2048)
    .superRefine((value, ctx) => {
      // zod runs this refinement after a failed z.url() too: a value that is not a URL was said already.
      if (!URL.canParse(value)) return;
      const url = new URL(value);
      if (url.username || url.password)
        ctx.addIssue({ code: 'custom', message: 'no credentials in the URL: verify the signature instead' });
      if (url.protocol === 'https:') return;
      if (url.protocol === 'http:' && (allowHttp || LOOPBACK.has(url.hostname))) return;
      ctx.addIssue({
        code: 'custom',
        message: 'an https URL (http only to localhost, or with WEBHOOK_ALLOW_HTTP=true)',
      });
    });
}

const eventsSchema = z
  .array(z.enum([...EVENT_TYPES, '*']))
  .min(1)
  .max(EVENT_TYPES.length + 1)
  .transform((events) => [...new Set(events)]);

export function createEndpointSchema(allowHttp: boolean) {
  return z
    .object({
      url: endpointUrl(allowHttp),
      /** The event types it receives; `*` for all (and any added later). */
      events: eventsSchema,
      description: z.string().max(500).optional(),
    })
    .strict();
}

export function updateEndpointSchema(allowHttp: boolean) {
  return z
    .object({
      url: endpointUrl(allowHttp).optional(),
      events: eventsSchema.optional(),
      description: z.string().max(500).nullable().optional(),
      /** `disabled` stops deliveries (the pending ones become dead, replayable); `enabled` clears the failure streak. */
      status: z.enum(['enabled', 'disabled']).optional(),
    })
    .strict()
    .refine((u) => Object.keys(u).length > 0, 'at least one field');
}

interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: string;
  disabledReason: string | null;
  disabledAt: Date | null;
  consecutiveFailures: number;
  failingSince: Date | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
}

export function endpointView(e: EndpointRow) {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    status: e.status,
    disabledReason: e.disabledReason,
    disabledAt: e.disabledAt?.toISOString() ?? null,
    /** The current failure streak (reset by a 2xx). */
    consecutiveFailures: e.consecutiveFailures,
    failingSince: e.failingSince?.toISOString() ?? null,
    /** After a rotation: until when deliveries also carry a signature with the previous secret. */
    previousSecretValidUntil:
      e.previousSecretExpiresAt && e.previousSecretExpiresAt > new Date()
        ? e.previousSecretExpiresAt.toISOString()
        : null,
    createdAt: e.createdAt.toISOString(),
  };
}

interface DeliveryRow {
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

const rotateSchema = z.object({ graceHours: z.number().min(0).max(168).optional() }).strict();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function webhookEndpointRoutes(deps: {
  prisma: PrismaClient;
  allowHttp: boolean;
  /** Non-public ranges an endpoint may be at (WEBHOOK_ALLOWED_ADDRESSES, or loopback in the sandbox profile). */
  allowedAddresses: readonly string[];
}): Router {
  const { prisma } = deps;
  // Refused at registration as at delivery (the worker checks the address it connects to).
  const checkAddress = async (url: string | undefined) => {
    const problem = url === undefined ? undefined : await endpointAddressProblem(url, deps.allowedAddresses);
    if (problem)
      throw new ApiError('validation_failed', undefined, [
        {
          path: 'url',
          message: `${problem}: an endpoint must be at a public address (an operator may allow ranges: WEBHOOK_ALLOWED_ADDRESSES)`,
        },
      ]);
  };
  const router = Router();
  uuidParams(router, 'id');
  const createSchema = createEndpointSchema(deps.allowHttp);
  const updateSchema = updateEndpointSchema(deps.allowHttp);

  router.post('/webhook-endpoints', async (req: Request, res: Response) => {
    const parsed = createSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    await checkAddress(parsed.data.url);
    const secret = newEndpointSecret();
    const created = await insertEndpoint(prisma, {
      url: parsed.data.url,
      events: parsed.data.events,
      description: parsed.data.description ?? null,
      secret,
    });
    // The only time the secret is shown: keep it where the receiver verifies signatures.
    res.status(201).json({ ...endpointView(created), secret });
  });

  router.get('/webhook-endpoints', async (req, res) => {
    const { limit, cursor } = listParams(req);
    const rows = await listEndpoints(prisma, { limit, cursor });
    res.json(pageOf(rows, limit, endpointView));
  });

  router.get('/webhook-endpoints/:id', async (req, res) => {
    const endpoint = await endpointById(prisma, String(req.params.id));
    if (!endpoint) throw new ApiError('not_found');
    res.json(endpointView(endpoint));
  });

  router.patch('/webhook-endpoints/:id', async (req: Request, res: Response) => {
    const id = String(req.params.id);
    const parsed = updateSchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const { status, ...fields } = parsed.data;
    if (!(await endpointById(prisma, id))) throw new ApiError('not_found');
    await checkAddress(fields.url);
    await updateEndpoint(prisma, id, fields);
    if (status) await setEndpointStatus(prisma, id, status, `disabled by api:${req.client!.name}`);
    res.json(endpointView((await endpointById(prisma, id))!));
  });

  /**
   * A new signing secret (shown this once); the old one keeps signing beside it (a second `v1`) for
   * `graceHours` (default 24, at most 168; 0: at once), time for the receiver to switch.
   */
  router.post('/webhook-endpoints/:id/rotate-secret', async (req: Request, res: Response) => {
    const id = String(req.params.id);
    const parsed = rotateSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw validation(parsed.error);
    const secret = await rotateEndpointSecret(prisma, id, (parsed.data.graceHours ?? 24) * 3_600_000);
    if (!secret) throw new ApiError('not_found');
    res.json({ ...endpointView((await endpointById(prisma, id))!), secret });
  });

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
      if (q(name) !== undefined && !UUID.test(q(name)!)) problems.push({ path: name, message: 'a UUID' });
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

  return router;
}
