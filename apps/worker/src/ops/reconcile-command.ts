/** `npm run ops --` commands: Reconciliation against the PAC's ledger. */
import { parseSince } from '../operations/since.ts';
import { type Command, Option } from 'commander';
import { dbLib, UsageError, CannotCheck, out, db, setExitCode } from './context.ts';

/**
 * `reconcile`: compare our invoices with a record of what was stamped — a PAC ledger (the sandbox's:
 * orphan stamps and duplicates) or the SAT's own (`--source sat`: Descarga Masiva). Exit 1 when
 * anything needs a person; exit 3 when the record cannot be read or does not cover the window.
 */
function reconcile(program: Command): void {
  program
    .command('reconcile')
    .description(
      "compare our invoices with a record of what was stamped: a PAC ledger (the sandbox's; orphan stamps and duplicates) or, with --source sat, the SAT's own (Descarga Masiva: orphans adopted or reported, missing, status, totals, receptors); exit 1 when anything needs a person, 3 when the record cannot be read or does not cover the window",
    )
    .addOption(new Option('--source <record>', 'ledger or sat').choices(['ledger', 'sat']).default('ledger'))
    .option('--ledger-url <url>', 'the PAC ledger (the sandbox admin URL); --source ledger')
    .option('--admin-token <token>', 'its admin token; --source ledger')
    .addOption(
      new Option('--until <when>', '--source sat: the end of the window (default: now)').argParser((v) =>
        parseSince(v),
      ),
    )
    .option('--organization <id or RFC>', '--source sat: whose record (default: EMISOR_RFC, or the only one)')
    .addOption(
      new Option(
        '--since <when>',
        'the window: ISO 8601 date or time, or a duration (30m, 12h, 7d); default: since our first stamp',
      ).argParser((v) => parseSince(v)),
    )
    .option(
      '--fix',
      'propose the repair of each duplicate: cancel the other UUIDs (motivo 01, replaced by ours; never both)',
    )
    .option('--execute', 'with --fix: queue those cancellations for the worker')
    .action(
      async (options: {
        source: 'ledger' | 'sat';
        ledgerUrl?: string;
        adminToken?: string;
        since?: Date;
        until?: Date;
        organization?: string;
        fix?: boolean;
        execute?: boolean;
      }) => {
        if (options.execute && !options.fix) throw new UsageError('--execute goes with --fix');
        if (options.source === 'sat') {
          if (options.fix) throw new UsageError('--fix goes with --source ledger');
          const { reconcileWithSatCommand } = await import('./sat-reconcile-command.ts');
          return reconcileWithSatCommand(options);
        }
        if (!options.ledgerUrl || !options.adminToken)
          throw new UsageError('--source ledger needs --ledger-url and --admin-token');
        return reconcileWithLedger({ ...options, ledgerUrl: options.ledgerUrl, adminToken: options.adminToken });
      },
    );
}

/** `reconcile` against a PAC ledger: orphan stamps and duplicates, `--fix` proposing (and `--execute` queueing) their repair. */
async function reconcileWithLedger(options: {
  ledgerUrl: string;
  adminToken: string;
  since?: Date;
  fix?: boolean;
  execute?: boolean;
}): Promise<void> {
  const { ledgerUrl, adminToken } = options;
  const prisma = await db();
  const { proposeFixes, reconcile, sandboxLedger, stampInstant } = await import('../operations/reconcile.ts');
  // Our first stamp by the PAC's clock (its FechaTimbrado), the clock of the ledger's window.
  const { invoices, firstTfd } = await (await dbLib.invoices()).stampedUuids(prisma);
  const windowStart = options.since ?? (firstTfd ? stampInstant(firstTfd) : undefined);
  let ledger;
  try {
    ledger = await sandboxLedger(ledgerUrl, adminToken).list(options.since?.toISOString());
  } catch (error) {
    throw new CannotCheck(`cannot read the PAC ledger at ${ledgerUrl}: ${(error as Error).message}`);
  }
  if (!ledger.coversSince)
    throw new CannotCheck('the PAC ledger does not say which window it covers: nothing can be concluded');
  if (windowStart && new Date(ledger.coversSince) > windowStart)
    throw new CannotCheck(
      `the PAC ledger covers only since ${ledger.coversSince}; the window asked for starts ${windowStart.toISOString()}${options.since ? '' : ' (our first stamp)'}: stamps before it cannot be checked — narrow --since or use a ledger that covers it`,
    );
  const invoiceOf = new Map(invoices.map((i) => [i.uuid!.toUpperCase(), i.id]));
  const result = reconcile(ledger.stamps, new Set(invoiceOf.keys()));
  const fixes = options.fix ? proposeFixes(result.duplicates, invoiceOf) : [];
  const executed = [];
  if (options.fix && options.execute) {
    for (const fix of fixes) {
      if (!('keep' in fix)) continue;
      for (const duplicateUuid of fix.cancel)
        executed.push({
          duplicateUuid,
          ...(await (
            await dbLib.invoices()
          ).requestDuplicateCancellation(prisma, { invoiceId: fix.invoiceId, duplicateUuid })),
        });
    }
  }
  out(
    { ...result, coversSince: ledger.coversSince, ...(options.fix ? { fixes, executed } : {}) },
    [
      `${result.stamps} stamps in the ledger (it covers since ${ledger.coversSince}), ${invoiceOf.size} UUIDs in the database`,
      `orphans: ${result.orphans.length}${result.orphans.map((o) => `\n  ${o.uuid} (${o.instance}${o.customid ? `, key ${o.customid}` : ''})`).join('')}`,
      `duplicates: ${result.duplicates.length}${result.duplicates.map((d) => `\n  by ${d.by} ${d.key}: ${d.uuids.join(', ')}`).join('')}`,
      ...(options.fix
        ? [
            `fixes${options.execute ? ' (queued)' : ' (proposed; --execute queues them)'}: ${fixes.length}${fixes
              .map((f) =>
                'keep' in f
                  ? `\n  keep ${f.keep}; cancel ${f.cancel.join(', ')} (motivo 01, replaced by ${f.keep})`
                  : `\n  skipped ${f.skipped.join(', ')}: ${f.reason}`,
              )
              .join('')}`,
          ]
        : []),
    ].join('\n'),
  );
  setExitCode(result.orphans.length + result.duplicates.length > 0 ? 1 : 0);
}

export function reconcileCommand(program: Command): void {
  reconcile(program);
}
