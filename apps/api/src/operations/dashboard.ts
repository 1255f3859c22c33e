import { timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { PrismaClient } from '@timbra/db';
import { JOBS, STAMP_DLQ, STAMP_QUEUE, type DeadLetterQueue } from '@timbra/db/outbox';
import type { RedisConnection } from '@timbra/db/redis';
import { ApiError } from '../http/errors.ts';
import { redactForDashboard } from './dashboard-redact.ts';
import { DEAD_LETTERS_PATH, deadLettersPage, type DeadLettersPageOptions } from './dead-letters-page.ts';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  prisma: PrismaClient;
  redis: RedisConnection;
  /** The stamp-dlq queue (the caller's: the API's re-drive route settles letters on it too). */
  dlq: DeadLetterQueue & Queue;
  /** BullMQ key prefix: the worker's QUEUE_PREFIX. */
  prefix: string;
  user: string;
  password: string;
  /** Offer Retry (a re-drive) on the dead-letters page; nothing else ever changes a queue. */
  allowDlqRetry: boolean;
  /** The board's own stamp queue's errors (Redis gone): without a listener BullMQ prints them raw to stderr. */
  onQueueError?: (error: Error, queue: string) => void;
  /**
   * Every organization's dead letters (platform mode): read with the database owner's client, each
   * re-drive written on its letter's organization's client. Absent: `prisma`'s organization alone.
   */
  organizations?: DeadLettersPageOptions['organizations'];
}

export { redactForDashboard };

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A job's name as the dashboard shows it: its serie-folio, and for a finished job what became of it. */
export function dashboardJobName(job: { name?: string; data?: unknown; returnvalue?: unknown }): string {
  const data = (job.data ?? {}) as { serieFolio?: unknown; rows?: unknown };
  const result = (job.returnvalue ?? {}) as {
    status?: unknown;
    dead?: unknown;
    settled?: unknown;
    redrivenBy?: unknown;
  };
  const parts = [job.name ?? '', typeof data.serieFolio === 'string' ? data.serieFolio : groupFolios(data.rows)];
  if (job.name === JOBS.cancel.name && typeof result.status === 'string')
    parts.push(`→ ${CANCEL_OUTCOME[result.status] ?? result.status}`);
  if (job.name === JOBS.deadLetter.name && result.dead === false)
    parts.push(
      result.settled === 'redriven'
        ? `→ re-driven by ${String(result.redrivenBy)}`
        : `→ settled (${String(result.settled)})`,
    );
  return parts.filter(Boolean).join(' ');
}

/** A `stamp-group` job's rows as the dashboard names them: the first and last serie-folio, and how many. */
function groupFolios(rows: unknown): string {
  if (!Array.isArray(rows) || rows.length === 0) return '';
  const folio = (row: unknown) => {
    const f = (row as { serieFolio?: unknown } | null)?.serieFolio;
    return typeof f === 'string' ? f : '?';
  };
  return rows.length === 1 ? folio(rows[0]) : `${folio(rows[0])} … ${folio(rows.at(-1))} (${rows.length})`;
}

// A cancel job completes whatever the SAT or the receptor said: its name says which.
const CANCEL_OUTCOME: Record<string, string> = {
  cancelled: 'cancelled',
  rejected: 'REJECTED by the receptor (the invoice stays valid)',
  failed: 'NOT cancelled: the PAC refused it',
};

/**
 * bull-board for the `stamp` and `stamp-dlq` queues behind HTTP Basic auth, read-only (bull-board
 * cannot offer Retry without Delete, Edit, Add, Empty and Obliterate). Dead letters are re-driven
 * from the dead-letters page beside it (`/admin/queues/dead-letters`, dead-letters-page.ts), which
 * reads Postgres — the record — and offers Retry when `allowDlqRetry`; each letter on the board
 * links there. Mounted by the app only when admin credentials are configured.
 */
export function dashboard(options: DashboardOptions): { router: Router; close: () => Promise<void> } {
  const queueOptions = { connection: options.redis, prefix: options.prefix };
  const stamp = new Queue(STAMP_QUEUE, queueOptions);
  stamp.on('error', (error) => options.onQueueError?.(error, STAMP_QUEUE));
  const adapters = boardAdapters(options, stamp);
  const serverAdapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: adapters,
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'Timbra queues',
        miscLinks: [{ text: 'Dead letters', url: `${DASHBOARD_PATH}/${DEAD_LETTERS_PATH}` }],
      },
    },
  });
  const board = serverAdapter.getRouter() as Router;
  const page = deadLettersPage({
    prisma: options.prisma,
    ...(options.organizations ? { organizations: options.organizations } : {}),
    dlq: options.dlq,
    allowRetry: options.allowDlqRetry,
    secret: options.password,
    base: `${DASHBOARD_PATH}/${DEAD_LETTERS_PATH}`,
  });

  const router = Router();
  router.use((req, res, next) => basicAuth(options, req, res, next));
  router.use(`/${DEAD_LETTERS_PATH}`, page);
  router.use(board);

  return {
    router,
    close: async () => {
      // The queues share the API's Redis connection: closing them leaves it open (the DLQ is the caller's).
      await stamp.close();
    },
  };
}

/** The two queues as bull-board shows them: read-only, jobs named by serie-folio, data redacted. */
function boardAdapters(options: DashboardOptions, stamp: Queue): BullMQAdapter[] {
  const adapters = [
    new BullMQAdapter(stamp, {
      readOnlyMode: true,
      description: 'Documents on their way to the PAC (stamp) and cancellations (cancel), named by serie-folio.',
    }),
    new BullMQAdapter(options.dlq, {
      readOnlyMode: true,
      displayName: `${STAMP_DLQ} (dead letters)`,
      description:
        'A view of the dead letters (Postgres is the record). Failed: still dead — open one to re-drive it. Completed: settled (re-driven, by whom). The worker consumes this queue to keep it true.',
      externalJobUrl: (job: { data?: unknown }) => {
        const outboxId = (job.data as { outboxId?: unknown } | undefined)?.outboxId;
        return typeof outboxId === 'string'
          ? {
              href: `${DASHBOARD_PATH}/${DEAD_LETTERS_PATH}/${outboxId}`,
              displayText: options.allowDlqRetry ? 'Open / re-drive' : 'Open',
            }
          : { href: `${DASHBOARD_PATH}/${DEAD_LETTERS_PATH}`, displayText: 'Dead letters' };
      },
    }),
  ];
  for (const adapter of adapters) {
    adapter.setFormatter('data', redactForDashboard);
    adapter.setFormatter('returnValue', redactForDashboard);
    adapter.setFormatter('name', dashboardJobName);
  }
  return adapters;
}

function basicAuth(options: DashboardOptions, req: Request, res: Response, next: NextFunction): void {
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
  res.locals.dashboardUser = user;
  next();
}
