/**
 * What Timbra forgets, and when: the one owner of the retention rules (ARCHITECTURE.md, "History and
 * retention"). The fiscal record — invoices, their versions, payments, refunds, installments,
 * tickets, globals, cancellations — is never deleted here: the Código Fiscal de la Federación
 * (art. 30) has it kept five years from the tax return it supports, longer when a dispute is open.
 * What goes is the machinery around it, once it can no longer matter:
 *
 * - `outbox`: `done` rows written more than `outboxDoneDays` ago (their job finished long ago; a job
 *   that still arrived would find no row and be skipped). Rows with a re-drive on record stay: the
 *   re-drive is the invoice's history.
 * - `pac_attempts`: calls older than `pacAttemptsDays`, of invoices with no outbox row still open
 *   (pending, enqueued, held or failed): while a row is open its attempts decide which PAC may be
 *   asked next (a PAC that may have stamped keeps the document) and what a correction must prove.
 *   A call still `in_flight` is never pruned.
 * - `webhook_events`: provider events received more than `webhookEventsDays` ago (providers stop
 *   redelivering after three days), except `failed` ones, which wait for an operator.
 *
 * Ages are the database's clock against columns it wrote (`created_at`, `received_at`: "Clocks: one per
 * rule" in ARCHITECTURE.md). Idempotency-Key records expire by their own TTL, the API's clock (purgeExpiredIdempotencyKeys, run
 * in the worker's retention pass). Deletes run in batches so no pass holds many locks or a long transaction.
 */
import { z } from 'zod';
import { Prisma } from './generated/client.ts';
import { col, queryRows, type Db } from './sql.ts';

export interface RetentionPolicy {
  /** Days a `done` outbox row is kept (0: for ever). */
  outboxDoneDays: number;
  /** Days a PAC call is kept once its invoice has no open outbox row (0: for ever). */
  pacAttemptsDays: number;
  /** Days a provider's webhook event is kept, unless it failed (0: for ever). */
  webhookEventsDays: number;
}

export const DEFAULT_RETENTION: RetentionPolicy = { outboxDoneDays: 30, pacAttemptsDays: 180, webhookEventsDays: 30 };

export const RETENTION_TABLES = ['outbox', 'pac_attempts', 'webhook_events'] as const;
export type RetentionTable = (typeof RETENTION_TABLES)[number];

/** The rows each rule would take now: one batch's worth of ids, oldest first where an index allows. */
function candidatesSql(table: RetentionTable, days: number, limit: number): Prisma.Sql {
  const cutoff = Prisma.sql`now() - make_interval(days => ${days})`;
  switch (table) {
    case 'outbox':
      return Prisma.sql`
        SELECT o.id FROM outbox o
        WHERE o.status = 'done' AND o.created_at < ${cutoff}
          AND NOT EXISTS (SELECT 1 FROM outbox_redrives r WHERE r.outbox_id = o.id)
        ORDER BY o.created_at LIMIT ${limit}`;
    case 'pac_attempts':
      return Prisma.sql`
        SELECT a.id FROM pac_attempts a
        WHERE a.created_at < ${cutoff} AND a.outcome <> 'in_flight'
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.invoice_id = a.invoice_id AND o.status <> 'done')
        ORDER BY a.created_at LIMIT ${limit}`;
    case 'webhook_events':
      return Prisma.sql`
        SELECT e.id FROM webhook_events e
        WHERE e.received_at < ${cutoff} AND e.result <> 'failed'
        ORDER BY e.received_at LIMIT ${limit}`;
  }
}

/** How many days `policy` keeps a table's rows (0: for ever). */
export const retentionDays = (policy: RetentionPolicy, table: RetentionTable): number =>
  ({ outbox: policy.outboxDoneDays, pac_attempts: policy.pacAttemptsDays, webhook_events: policy.webhookEventsDays })[
    table
  ];

const countRow = z.object({ n: col.int });

export interface PruneOptions {
  /** Rows deleted per statement. Default 5 000. */
  batchSize?: number;
  /** Stop a table after this many batches in one pass (the next pass goes on). Default 100. */
  maxBatches?: number;
  /** Count what would go, delete nothing. */
  dryRun?: boolean;
  /** Called after each batch, for progress logs. */
  onBatch?: (table: RetentionTable, deleted: number) => void;
}

/**
 * One pass of the retention rules: deletes (or, with `dryRun`, counts up to a pass's worth of) what
 * each rule lets go, in batches. @returns rows per table.
 */
export async function pruneHistory(
  db: Db,
  policy: RetentionPolicy,
  options: PruneOptions = {},
): Promise<Record<RetentionTable, number>> {
  const batchSize = options.batchSize ?? 5_000;
  const maxBatches = options.maxBatches ?? 100;
  const result = { outbox: 0, pac_attempts: 0, webhook_events: 0 } satisfies Record<RetentionTable, number>;
  for (const table of RETENTION_TABLES) {
    const days = retentionDays(policy, table);
    if (days <= 0) continue;
    if (options.dryRun) {
      const [row] = await queryRows(
        db,
        countRow,
        Prisma.sql`SELECT count(*)::int AS n FROM (${candidatesSql(table, days, batchSize * maxBatches)}) AS c`,
      );
      result[table] = row?.n ?? 0;
      continue;
    }
    for (let batch = 0; batch < maxBatches; batch++) {
      const [row] = await queryRows(
        db,
        countRow,
        Prisma.sql`
          WITH doomed AS (${candidatesSql(table, days, batchSize)}),
               gone AS (DELETE FROM ${Prisma.raw(table)} t USING doomed d WHERE t.id = d.id RETURNING 1)
          SELECT count(*)::int AS n FROM gone`,
      );
      const deleted = row?.n ?? 0;
      result[table] += deleted;
      if (deleted > 0) options.onBatch?.(table, deleted);
      if (deleted < batchSize) break;
    }
  }
  return result;
}
