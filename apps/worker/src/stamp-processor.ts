import { randomUUID } from 'node:crypto';
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import { Prisma, type PrismaClient } from '@timbra/db';
import type { DeadLetterData, StampJobData } from './jobs.ts';
import { stickyPac, type AttemptRecord, type PacChain } from './pac-chain.ts';

export interface StampProcessorDeps {
  prisma: PrismaClient;
  chain: PacChain;
  dlq: Queue<DeadLetterData>;
  logger: Logger;
  /** Freezes the documents waiting for an invoice just stamped (absent: none are handled here). */
  freezeDependents?: (invoiceId: string) => Promise<number>;
  /** Receives every job's PAC calls (metrics). */
  onAttempts?: (attempts: readonly AttemptRecord[]) => void;
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
    // One round trip: the row, its invoice's frozen bytes and the PAC-attempt history.
    const [row] = await prisma.$queryRaw<LoadedRow[]>`
      SELECT o.id, o.status, o.stamp_key AS "stampKey", o.invoice_id AS "invoiceId", i.frozen_xml AS "frozenXml",
             COALESCE((SELECT json_agg(json_build_object('pac', a.pac, 'outcome', a.outcome) ORDER BY a.created_at, a.id)
                       FROM pac_attempts a WHERE a.invoice_id = o.invoice_id), '[]'::json) AS history
      FROM outbox o JOIN invoices i ON i.id = o.invoice_id
      WHERE o.id = ${job.data.outboxId}::uuid`;
    if (!row || row.status === 'done' || row.status === 'failed') return { skipped: row?.status ?? 'missing' };
    const log = logger.child({ jobId: job.id, stampKey: row.stampKey, invoiceId: row.invoiceId });
    if (!row.frozenXml) {
      await deadLetter(deps, row, 'the invoice has no frozen XML', 'NO_XML');
      throw new UnrecoverableError('no frozen XML');
    }
    // Write-ahead: each PAC call is recorded `in_flight` (committed) before it is made, and updated
    // with its outcome after. A worker killed during the call leaves that row: the next attempt
    // stays with that PAC (stickyPac), which may have stamped — a second PAC would stamp again.
    const beforeSend = async (pac: string) => {
      const id = randomUUID();
      await prisma.$executeRaw`
        INSERT INTO pac_attempts (id, invoice_id, pac, outcome, duration_ms)
        VALUES (${id}::uuid, ${row.invoiceId}::uuid, ${pac}, 'in_flight', 0)`;
      return id;
    };
    const { result, error, attempts } = await deps.chain.stamp(
      row.frozenXml,
      row.stampKey,
      stickyPac(row.history),
      beforeSend,
    );
    deps.onAttempts?.(attempts);

    if (result?.sameDocument) {
      // One statement, so one transaction: the stamp on the invoice (only from a status that may
      // become stamped, see invoice-status.ts), the row done, and every PAC call in the ledger.
      const [written] = await prisma.$queryRaw<{ invoice_id: string | null; waiting: boolean }[]>`
        WITH stamped AS (
          UPDATE invoices SET uuid = ${result.uuid}, tfd_xml = ${result.tfdXml}, stamped_xml = ${result.stampedXml},
                 pac = ${result.pac}, stamped_at = now(), status = 'stamped', updated_at = now()
          WHERE id = ${row.invoiceId}::uuid AND status IN ('pending', 'stamp_failed')
          RETURNING id
        ), done AS (
          UPDATE outbox SET status = 'done', attempts = attempts + 1, last_error = NULL, updated_at = now()
          WHERE id = ${row.id}::uuid AND EXISTS (SELECT 1 FROM stamped)
          RETURNING id
        ), ledger AS (
          ${ledgerUpsert(row.invoiceId, attempts)}
          RETURNING id
        )
        SELECT (SELECT id FROM stamped) AS invoice_id, (SELECT count(*) FROM ledger)::int AS recorded, (SELECT count(*) FROM done)::int AS done,
               EXISTS (SELECT 1 FROM invoices WHERE related_invoice_id = ${row.invoiceId}::uuid AND status = 'waiting') AS waiting`;
      if (!written?.invoice_id) {
        // The invoice moved on (stamped by another job, or cancelled): nothing to write.
        log.warn({ uuid: result.uuid }, 'stamp answered for an invoice that is no longer pending');
        return { skipped: 'not_pending', uuid: result.uuid };
      }
      log.info({ uuid: result.uuid, pac: result.pac, recovered: result.recovered }, 'stamped');
      // A follow-up step, idempotent on its own, only when documents wait for this one (the statement
      // above says so, sparing every other stamp a transaction): if the worker dies here, or a
      // dependent commits just after that look, the sweeper does it.
      const dependents = written.waiting && deps.freezeDependents ? await deps.freezeDependents(row.invoiceId) : 0;
      if (dependents > 0) log.info({ dependents }, 'dependent documents frozen');
      return { uuid: result.uuid, pac: result.pac, recovered: result.recovered, dependents };
    }

    await prisma.$transaction([
      prisma.$executeRaw`${ledgerUpsert(row.invoiceId, attempts)}`,
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

interface LoadedRow {
  id: string;
  status: string;
  stampKey: string;
  invoiceId: string;
  frozenXml: string | null;
  history: { pac: string; outcome: string }[];
}

/**
 * Writes the PAC calls' outcomes: each call's `in_flight` row (by its id) gets its outcome; a call
 * without one (a circuit-open skip) gets a row of its own.
 */
function ledgerUpsert(invoiceId: string, attempts: readonly AttemptRecord[]): Prisma.Sql {
  const entries = attempts.map((a) => ({
    id: a.id ?? null,
    pac: a.pac,
    outcome: a.outcome,
    uuid: a.uuid ?? null,
    code: a.code ?? null,
    duration_ms: a.durationMs,
  }));
  return Prisma.sql`
    INSERT INTO pac_attempts (id, invoice_id, pac, outcome, uuid, code, duration_ms)
    SELECT COALESCE(a.id, gen_random_uuid()), ${invoiceId}::uuid, a.pac, a.outcome, a.uuid, a.code, a.duration_ms
    FROM json_to_recordset(${JSON.stringify(entries)}::json)
         AS a(id uuid, pac text, outcome text, uuid text, code text, duration_ms int)
    ON CONFLICT (id) DO UPDATE
      SET outcome = EXCLUDED.outcome, uuid = EXCLUDED.uuid, code = EXCLUDED.code, duration_ms = EXCLUDED.duration_ms`;
}

async function deadLetter(
  deps: StampProcessorDeps,
  row: { id: string; stampKey: string; invoiceId: string },
  reason: string,
  code: string,
  pac?: string,
): Promise<void> {
  const waitingDependents = await deps.prisma.$transaction(async (tx) => {
    await tx.outboxRow.update({
      where: { id: row.id },
      data: { status: 'failed', lastError: `${code}: ${reason}`.slice(0, 2000) },
    });
    const invoice = await tx.invoice.findUniqueOrThrow({ where: { id: row.invoiceId }, select: { status: true } });
    if (invoice.status === 'pending')
      await tx.invoice.update({ where: { id: row.invoiceId }, data: { status: 'stamp_failed' } });
    return tx.invoice.count({ where: { relatedInvoiceId: row.invoiceId, status: 'waiting' } });
  });
  const letter: DeadLetterData = {
    outboxId: row.id,
    stampKey: row.stampKey,
    invoiceId: row.invoiceId,
    reason,
    code,
    ...(pac ? { pac } : {}),
    failedAt: new Date().toISOString(),
    ...(waitingDependents > 0 ? { waitingDependents } : {}),
  };
  await deps.dlq.add('dead-letter', letter, {
    jobId: `${row.stampKey}-${Date.now()}`,
    removeOnComplete: false,
    removeOnFail: false,
  });
  deps.logger.error({ alert: 'stamp_dead_letter', ...letter }, 'invoice dead-lettered');
  await deps.alert(letter);
}
