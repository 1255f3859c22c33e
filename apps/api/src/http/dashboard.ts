import { timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { NextFunction, Request, Response, Router } from 'express';
import type { Redis } from 'ioredis';
import { STAMP_DLQ, STAMP_QUEUE } from '@timbra/db';
import { ApiError } from '../errors.ts';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  redis: Redis;
  /** BullMQ key prefix: the worker's QUEUE_PREFIX. */
  prefix: string;
  user: string;
  password: string;
  /** Allow retrying dead letters from the dashboard; everything else is read-only. */
  allowDlqRetry: boolean;
}

// RFCs (personas morales and físicas) and anything that looks like XML: job views show neither.
const RFC = /\b[A-ZÑ&]{3,4}\d{6}[A-Z\d]{3}\b/g;
const XML = /<[A-Za-z?!/][^>]*>/;

/** Job data and results as the dashboard shows them: RFCs and XML replaced, recursively. */
export function redactForDashboard(value: unknown): unknown {
  if (typeof value === 'string') {
    return XML.test(value) ? '[xml redacted]' : value.replace(RFC, '[rfc]');
  }
  if (Array.isArray(value)) return value.map(redactForDashboard);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactForDashboard(v)]));
  }
  return value;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * bull-board for the `stamp` and `stamp-dlq` queues behind HTTP Basic auth. Read-only, except
 * retrying dead letters when `allowDlqRetry`. Mounted by the app only when admin credentials are
 * configured: without them the route does not exist.
 */
export function dashboard(options: DashboardOptions): { router: Router; close: () => Promise<void> } {
  const queueOptions = { connection: options.redis, prefix: options.prefix };
  const stamp = new Queue(STAMP_QUEUE, queueOptions);
  const dlq = new Queue(STAMP_DLQ, queueOptions);
  const adapters = [
    new BullMQAdapter(stamp, { readOnlyMode: true }),
    new BullMQAdapter(dlq, { readOnlyMode: !options.allowDlqRetry, allowRetries: options.allowDlqRetry }),
  ];
  for (const adapter of adapters) {
    adapter.setFormatter('data', redactForDashboard);
    adapter.setFormatter('returnValue', redactForDashboard);
  }
  const serverAdapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
  createBullBoard({ queues: adapters, serverAdapter });
  const board = serverAdapter.getRouter() as Router;

  const guarded = ((req: Request, res: Response, next: NextFunction) => {
    const [scheme, encoded] = (req.get('authorization') ?? '').split(' ');
    const [user = '', ...rest] =
      scheme?.toLowerCase() === 'basic'
        ? Buffer.from(encoded ?? '', 'base64')
            .toString('utf8')
            .split(':')
        : [];
    // Both compared, always: no early exit that would tell a wrong user from a wrong password.
    const userOk = sameSecret(user, options.user);
    const passwordOk = sameSecret(rest.join(':'), options.password);
    if (!userOk || !passwordOk) {
      next(
        new ApiError('unauthorized', 'Admin credentials are required.', undefined, {
          'WWW-Authenticate': 'Basic realm="timbra queues", charset="UTF-8"',
        }),
      );
      return;
    }
    board(req, res, next);
  }) as unknown as Router;

  return {
    router: guarded,
    close: async () => {
      // The queues share the API's Redis connection: closing them leaves it open.
      await Promise.all([stamp.close(), dlq.close()]);
    },
  };
}
