/** `npm run ops --` commands: Retention: pruning history past its days, and stamped XML stored twice. */
import { InvalidArgumentError, type Command } from 'commander';
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

/** A stored copy kept, and why: it is the document, not a copy of what the row rebuilds. */
interface KeptCopy {
  id: string;
  serieFolio: string;
  why: Exclude<CopyVerdict, 'same'>;
}

export type CopyVerdict = 'same' | 'differs' | 'no TFD' | 'cannot rebuild';

/** Whether a stored stamped XML is what its row's frozen XML and TFD rebuild, byte for byte. */
export function copyVerdict(
  copy: { frozenXml: string | null; tfdXml: string | null; stampedXml: string },
  rebuild: (invoice: { frozenXml: string | null; tfdXml: string | null }) => string | null,
): CopyVerdict {
  if (!copy.frozenXml || !copy.tfdXml) return 'no TFD';
  let rebuilt: string | null;
  try {
    rebuilt = rebuild({ frozenXml: copy.frozenXml, tfdXml: copy.tfdXml });
  } catch {
    return 'cannot rebuild';
  }
  return rebuilt === copy.stampedXml ? 'same' : 'differs';
}

/**
 * `stamped-xml:compact`: forget the whole stamped XML that versions before the TFD-only stamp stored,
 * each copy only once its rebuild (frozen XML + TFD) is the same bytes; every read then rebuilds it.
 */
function stampedXmlCompact(program: Command): void {
  program
    .command('stamped-xml:compact')
    .description(
      'forget the stamped XML that earlier versions stored whole beside the frozen XML and TFD, each only when the two rebuild it byte for byte (a copy that differs is kept and listed); every organization',
    )
    .option('--dry-run', 'compare and count, forget nothing')
    .option('--batch <n>', 'invoices a batch', (v) => positiveInteger('--batch', v), 500)
    .action(async (options: { dryRun?: boolean; batch: number }) => {
      const prisma = await db();
      const { stampedCopies, forgetStampedCopies } = await dbLib.invoices();
      const { stampedXmlOf } = await import('@timbra/cfdi-core');
      const kept: KeptCopy[] = [];
      let checked = 0;
      let forgotten = 0;
      let after: string | undefined;
      for (;;) {
        const batch = await stampedCopies(prisma, after, options.batch);
        if (batch.length === 0) break;
        after = batch.at(-1)!.id;
        checked += batch.length;
        const same = batch.filter((c) => {
          const why = copyVerdict(c, stampedXmlOf);
          if (why === 'same') return true;
          kept.push({ id: c.id, serieFolio: `${c.serie}-${c.folio}`, why });
          return false;
        });
        forgotten += options.dryRun ? same.length : await forgetStampedCopies(prisma, same);
        note(`  ${checked} checked, ${forgotten} ${options.dryRun ? 'to forget' : 'forgotten'}, ${kept.length} kept\n`);
      }
      const verb = options.dryRun ? 'would forget' : 'forgot';
      out(
        { dryRun: Boolean(options.dryRun), checked, [options.dryRun ? 'wouldForget' : 'forgotten']: forgotten, kept },
        [
          `${checked} invoices stored their stamped XML whole; ${verb} ${forgotten} (rebuilt byte for byte from the frozen XML and TFD)`,
          ...(kept.length > 0
            ? [
                `kept ${kept.length}, each the document itself:`,
                ...kept.map((k) => `  ${k.serieFolio} ${k.id} (${k.why})`),
              ]
            : []),
        ].join('\n'),
      );
    });
}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new InvalidArgumentError(`${flag}: a whole number 1–10000`);
  return n;
}

export function historyCommands(program: Command): void {
  historyPrune(program);
  stampedXmlCompact(program);
}
