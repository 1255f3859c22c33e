/** `npm run ops --` commands: Retention: pruning history past its days. */
import { type Command } from 'commander';
import { dbLib, out, config, db, note } from './context.ts';

/** `history:prune`: apply the retention rules now (the sweeper role does it every RETENTION_INTERVAL_MS): done outbox rows, old PAC calls, old provider events; invoices are never deleted. */
function historyPrune(program: Command): void {
  program
    .command('history:prune')
    .description(
      'apply the retention rules now (the sweeper role does it every RETENTION_INTERVAL_MS): done outbox rows, old PAC calls, old provider events; invoices are never deleted',
    )
    .option('--dry-run', 'count what would be deleted (up to 100 batches a table), delete nothing')
    .action(async (options: { dryRun?: boolean }) => {
      const prisma = await db();
      const { pruneHistory, RETENTION_TABLES, retentionDays } = await dbLib.retention();
      const c = await config();
      const policy = (await import('../config-schema.ts')).retentionPolicy(c);
      const rows = await pruneHistory(prisma, policy, {
        batchSize: c.RETENTION_BATCH_SIZE,
        dryRun: Boolean(options.dryRun),
        onBatch: (table, n) => note(`  ${table}: ${n} deleted\n`),
      });
      const verb = options.dryRun ? 'would delete' : 'deleted';
      out(
        { dryRun: Boolean(options.dryRun), policy, [options.dryRun ? 'wouldDelete' : 'deleted']: rows },
        RETENTION_TABLES.map((t) => {
          const days = retentionDays(policy, t);
          return `${t.padEnd(15)} ${days > 0 ? `${verb} ${rows[t]} (kept ${days} days)` : 'kept for ever (0 days)'}`;
        }).join('\n'),
      );
    });
}

export function historyCommands(program: Command): void {
  historyPrune(program);
}
