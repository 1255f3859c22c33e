/**
 * The merchant's webhook endpoints (admin keys: they receive every customer's data): register one
 * (its signing secret shown once), list, change, enable or disable it, rotate its secret. Their
 * deliveries and test events: delivery-routes.ts. docs/webhooks.md tells a receiver how to verify
 * and dedupe.
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { PrismaClient } from '@timbra/db';
import {
  endpointById,
  insertEndpoint,
  listEndpoints,
  updateEndpoint,
  endpointAddressProblem,
  EVENT_TYPES,
  newEndpointSecret,
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

const rotateSchema = z.object({ graceHours: z.number().min(0).max(168).optional() }).strict();

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

  return router;
}
