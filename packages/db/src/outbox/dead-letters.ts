/**
 * The dead-letter truth is Postgres: an outbox row in status `failed` is a dead letter, and nothing
 * else is. The `stamp-dlq` queue is a view of it for the dashboard — a letter job per failure — and
 * is kept true here: a letter whose row was re-driven (or is no longer failed) is settled, i.e. sent
 * back to the queue's consumer, which completes it with what became of the row. An outbox row
 * becomes one here too (`deadLetterOutboxRow`, the stamp processor's last failure).
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { statusGuard } from '../invoices/invoice-status.ts';
import { queryRows } from '../sql.ts';
import { JOBS } from './queues.ts';
import { redriveOutboxRow, type RedriveBy, type RedriveResult } from './redrive.ts';

/** What settling needs of the `stamp-dlq` queue: a BullMQ `Queue` is one. */
export interface DeadLetterQueue {
  getJobs(
    types: 'failed'[],
    start?: number,
    end?: number,
  ): Promise<
    ({ data: unknown; retry: (state?: 'failed') => Promise<void>; getState: () => Promise<string> } | undefined)[]
  >;
}

/** A letter's state: still dead, or settled — how (re-driven by whom, or the row moved on) and what the row is now. */
export type DeadLetterState =
  | { dead: true; serieFolio: string }
  | {
      dead: false;
      serieFolio: string;
      settled: 'redriven' | 'row_moved_on' | 'row_missing';
      redrivenBy?: string;
      redrivenAt?: string;
      reason?: string | null;
      outboxStatus?: string;
      invoiceStatus?: string;
    };

/**
 * What a letter (its outbox row and when it failed) stands for now: dead while its row is failed and
 * no re-drive came after the failure.
 */
export async function deadLetterState(
  prisma: PrismaClient,
  letter: { outboxId: string; failedAt: string },
): Promise<DeadLetterState> {
  const row = await prisma.outboxRow.findUnique({
    where: { id: letter.outboxId },
    select: {
      status: true,
      invoice: { select: { serie: true, folio: true, status: true } },
      redrives: { where: { createdAt: { gte: new Date(letter.failedAt) } }, orderBy: { createdAt: 'asc' }, take: 1 },
    },
  });
  if (!row) return { dead: false, serieFolio: '?', settled: 'row_missing' };
  const serieFolio = `${row.invoice.serie}-${row.invoice.folio}`;
  const redrive = row.redrives[0];
  if (!redrive && row.status === 'failed') return { dead: true, serieFolio };
  return {
    dead: false,
    serieFolio,
    settled: redrive ? 'redriven' : 'row_moved_on',
    ...(redrive ? { redrivenBy: redrive.by, redrivenAt: redrive.createdAt.toISOString(), reason: redrive.reason } : {}),
    outboxStatus: row.status,
    invoiceStatus: row.invoice.status,
  };
}

/**
 * Settles the letters in the queue's failed set that are no longer dead (only those of `outboxIds`
 * when given): each is retried, and the queue's consumer completes it with its state. Returns how
 * many were settled. Called after every re-drive and by the worker's sweeper (which catches a
 * re-drive made while Redis was away).
 */
export async function settleDeadLetters(
  prisma: PrismaClient,
  dlq: DeadLetterQueue,
  outboxIds?: readonly string[],
  owner?: LetterOwner,
): Promise<number> {
  const only = outboxIds ? new Set(outboxIds) : undefined;
  let settled = 0;
  for (const job of await dlq.getJobs(['failed'], 0, 999)) {
    if (!job) continue;
    const parsed = JOBS.deadLetter.data.safeParse(job.data);
    if (!parsed.success || (only && !only.has(parsed.data.outboxId))) continue;
    // Another organization's letter: its row is out of this client's sight, not gone.
    if (owner && !ownsLetter(owner, parsed.data)) continue;
    if ((await deadLetterState(prisma, parsed.data)).dead) continue;
    try {
      await job.retry('failed');
    } catch (error) {
      // Settled meanwhile by another settler (a second worker's sweep, the API after a re-drive):
      // no longer in the failed set, which is what this was for.
      if ((await job.getState()) !== 'failed') continue;
      throw error;
    }
    settled++;
  }
  return settled;
}

/**
 * Whose letters a client settles: its organization's (`org`), and when it is the home organization,
 * the letters that name none (published before letters carried it, or by a one-organization worker).
 */
export interface LetterOwner {
  organization: string;
  home: boolean;
}

export function ownsLetter(owner: LetterOwner, letter: { org?: string | undefined }): boolean {
  return letter.org === undefined ? owner.home : letter.org === owner.organization;
}

/**
 * A re-drive of a dead letter, whoever asks (API, dashboard, ops CLI): the row back to pending with
 * its audit record (`redriveOutboxRow`), then its letter settled in `stamp-dlq` when a queue is
 * given. Settling is best effort — Redis may be away — and the worker's sweeper settles what is left:
 * `settled: 'later'`.
 */
export async function redriveDeadLetter(
  prisma: PrismaClient,
  outboxId: string,
  who: RedriveBy,
  dlq?: DeadLetterQueue,
): Promise<RedriveResult & { settled?: number | 'later' }> {
  const result = await redriveOutboxRow(prisma, outboxId, who);
  if (!result.ok || !dlq) return result;
  try {
    return { ...result, settled: await settleDeadLetters(prisma, dlq, [outboxId]) };
  } catch {
    return { ...result, settled: 'later' };
  }
}

/** The dead letters (outbox rows failed for good), newest first, with their invoice and how often each was re-driven. */
export function deadLetterRows(db: PrismaClient, limit = 500) {
  return db.outboxRow.findMany({
    where: { status: 'failed' },
    orderBy: { updatedAt: 'desc' },
    take: limit,
    include: {
      invoice: { select: { serie: true, folio: true, kind: true, status: true } },
      _count: { select: { redrives: true } },
    },
  });
}

/** The latest re-drives, newest first, with the invoice each concerned. */
export function recentRedrives(db: PrismaClient, limit = 20) {
  return db.outboxRedrive.findMany({
    orderBy: { createdAt: 'desc' },
    take: limit,
    include: { invoice: { select: { serie: true, folio: true, status: true } } },
  });
}

/** One outbox row with its invoice and its re-drives, oldest first; null when there is none. */
export function outboxRowWithRedrives(db: PrismaClient, id: string) {
  return db.outboxRow.findUnique({
    where: { id },
    include: {
      invoice: { select: { id: true, serie: true, folio: true, kind: true, status: true, uuid: true } },
      redrives: { orderBy: { createdAt: 'asc' } },
    },
  });
}

/** Every dead letter's outbox id. */
export async function deadLetterIds(db: PrismaClient): Promise<string[]> {
  return (await db.outboxRow.findMany({ where: { status: 'failed' }, select: { id: true } })).map((r) => r.id);
}

const DEAD_LETTERED = statusGuard(['pending'], 'stamp_failed');

const deadLetteredRow = z.object({ failed_at: z.date() });

/**
 * Dead-letters an outbox row: the row `failed` (from pending or enqueued: a row a correction holds
 * stays held), its invoice `stamp_failed` (from pending), in one transaction. @returns when it failed
 * by the database's clock (the clock of the re-drives a letter is settled against) and how many
 * documents wait for this invoice (blocked with it), or undefined when the row was not dead-lettered
 * (a correction holds it, or it is done).
 */
export async function deadLetterOutboxRow(
  prisma: PrismaClient,
  row: { outboxId: string; invoiceId: string },
  lastError: string,
): Promise<{ failedAt: Date; waitingDependents: number } | undefined> {
  return prisma.$transaction(async (tx) => {
    const [failed] = await queryRows(
      tx,
      deadLetteredRow,
      Prisma.sql`UPDATE outbox SET status = 'failed', last_error = ${lastError.slice(0, 2000)}, updated_at = now()
        WHERE id = ${row.outboxId}::uuid AND status IN ('pending', 'enqueued')
        RETURNING now() AS failed_at`,
    );
    if (!failed) return undefined;
    await tx.$executeRaw`UPDATE invoices SET status = 'stamp_failed', updated_at = now() WHERE id = ${row.invoiceId}::uuid AND ${DEAD_LETTERED}`;
    const waitingDependents = await tx.invoice.count({ where: { relatedInvoiceId: row.invoiceId, status: 'waiting' } });
    return { failedAt: failed.failed_at, waitingDependents };
  });
}
