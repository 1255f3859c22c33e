import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import { assertTransition, type InvoiceStatus, type PrismaClient } from '@timbra/db';
import type { DeadLetterData, StampJobData } from './jobs.ts';
import { stickyPac, type AttemptRecord, type PacChain } from './pac-chain.ts';

export interface StampProcessorDeps {
  prisma: PrismaClient;
  chain: PacChain;
  dlq: Queue<DeadLetterData>;
  logger: Logger;
  /** Called with every dead letter (logs an alert; optionally POSTs it). */
  alert: (letter: DeadLetterData) => Promise<void> | void;
}

/**
 * Stamps one outbox row. Idempotent by construction: a row already done returns at once; the frozen
 * bytes are sent unchanged with the stamp key as idempotency key, so a repeated job (stalled worker,
 * re-added job) gets the same stamp back from the PAC.
 */
export function createStampProcessor(deps: StampProcessorDeps) {
  return async (job: Job<StampJobData>) => {
    const { prisma, logger } = deps;
    const row = await prisma.outboxRow.findUnique({ where: { id: job.data.outboxId }, include: { invoice: true } });
    if (!row || row.status === 'done' || row.status === 'failed') return { skipped: row?.status ?? 'missing' };
    const log = logger.child({ jobId: job.id, stampKey: row.stampKey, invoiceId: row.invoiceId });
    const frozenXml = row.invoice.frozenXml;
    if (!frozenXml) {
      await deadLetter(deps, row, 'the invoice has no frozen XML', 'NO_XML');
      throw new UnrecoverableError('no frozen XML');
    }
    const history = await prisma.pacAttempt.findMany({
      where: { invoiceId: row.invoiceId },
      orderBy: { createdAt: 'asc' },
      select: { pac: true, outcome: true },
    });
    const sticky = stickyPac(history);
    const { result, error, attempts } = await deps.chain.stamp(frozenXml, row.stampKey, sticky);

    if (result?.sameDocument) {
      await prisma.$transaction(async (tx) => {
        const invoice = await tx.invoice.findUniqueOrThrow({ where: { id: row.invoiceId }, select: { status: true } });
        assertTransition(invoice.status as InvoiceStatus, 'stamped');
        await tx.invoice.update({
          where: { id: row.invoiceId },
          data: {
            uuid: result.uuid,
            tfdXml: result.tfdXml,
            stampedXml: result.stampedXml,
            pac: result.pac,
            stampedAt: new Date(),
            status: 'stamped',
          },
        });
        await tx.outboxRow.update({
          where: { id: row.id },
          data: { status: 'done', attempts: { increment: 1 }, lastError: null },
        });
        await tx.pacAttempt.createMany({ data: attempts.map((a) => attemptRow(row.invoiceId, a)) });
      });
      log.info({ uuid: result.uuid, pac: result.pac, recovered: result.recovered }, 'stamped');
      return { uuid: result.uuid, pac: result.pac, recovered: result.recovered };
    }

    await prisma.$transaction([
      prisma.pacAttempt.createMany({ data: attempts.map((a) => attemptRow(row.invoiceId, a)) }),
      prisma.outboxRow.update({
        where: { id: row.id },
        data: {
          attempts: { increment: 1 },
          lastError: error ? `${error.pac}: ${error.pacCode}: ${error.message}`.slice(0, 2000) : 'foreign stamp',
        },
      }),
    ]);

    if (result && !result.sameDocument) {
      // The PAC holds a stamp for this key that belongs to another document: never recorded as this
      // invoice's stamp automatically. Its UUID is in pac_attempts for reconciliation.
      await deadLetter(
        deps,
        row,
        `the PAC holds stamp ${result.uuid} of another document for this key`,
        'FOREIGN_STAMP',
        result.pac,
      );
      throw new UnrecoverableError('foreign stamp');
    }
    const failure = error!;
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (failure.outcome === 'permanent' || lastAttempt) {
      // Postgres first: it is the record; the DLQ queue is the view.
      await deadLetter(deps, row, failure.message, failure.pacCode, failure.pac);
      throw new UnrecoverableError(`${failure.pacCode}: ${failure.message}`);
    }
    log.warn(
      { outcome: failure.outcome, code: failure.pacCode, pac: failure.pac, attempt: job.attemptsMade + 1 },
      'stamp attempt failed; will retry',
    );
    throw new Error(`${failure.outcome}: ${failure.pacCode}`);
  };
}

function attemptRow(invoiceId: string, a: AttemptRecord) {
  return {
    invoiceId,
    pac: a.pac,
    outcome: a.outcome,
    uuid: a.uuid ?? null,
    code: a.code ?? null,
    durationMs: a.durationMs,
  };
}

async function deadLetter(
  deps: StampProcessorDeps,
  row: { id: string; stampKey: string; invoiceId: string },
  reason: string,
  code: string,
  pac?: string,
): Promise<void> {
  await deps.prisma.$transaction(async (tx) => {
    await tx.outboxRow.update({
      where: { id: row.id },
      data: { status: 'failed', lastError: `${code}: ${reason}`.slice(0, 2000) },
    });
    const invoice = await tx.invoice.findUniqueOrThrow({ where: { id: row.invoiceId }, select: { status: true } });
    if (invoice.status === 'pending')
      await tx.invoice.update({ where: { id: row.invoiceId }, data: { status: 'stamp_failed' } });
  });
  const letter: DeadLetterData = {
    outboxId: row.id,
    stampKey: row.stampKey,
    invoiceId: row.invoiceId,
    reason,
    code,
    ...(pac ? { pac } : {}),
    failedAt: new Date().toISOString(),
  };
  await deps.dlq.add('dead-letter', letter, {
    jobId: `${row.stampKey}-${Date.now()}`,
    removeOnComplete: false,
    removeOnFail: false,
  });
  deps.logger.error({ alert: 'stamp_dead_letter', ...letter }, 'invoice dead-lettered');
  await deps.alert(letter);
}
