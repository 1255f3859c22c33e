/** `npm run ops --` commands: The outbox and its dead letters: counts, the letters, re-drives. */
import { userInfo } from 'node:os';
import { type Command } from 'commander';
import {
  dbLib,
  UsageError,
  uuidArg,
  out,
  db,
  deadLetterQueue,
  setExitCode,
  env,
  organizationDb,
  organizationOfRow,
} from './context.ts';

/** `outbox:stats`: outbox rows by status, and the age of the oldest not done. */
function outboxStats(program: Command): void {
  program
    .command('outbox:stats')
    .description('outbox rows by status, and the age of the oldest not done')
    .action(async () => {
      const prisma = await db();
      const { outboxCountsByStatus } = await dbLib.outbox();
      const { backlogEverywhere } = await dbLib.organizations();
      const rows = await outboxCountsByStatus(prisma, { includeDone: true });
      // The owner's session: every organization's backlog (the late rule does not matter here).
      const backlog = await backlogEverywhere(prisma, { windowMs: 0, marginMs: 0 }, undefined);
      const stats = {
        byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])),
        oldestNotDoneSeconds: Math.max(0, ...backlog.map((b) => b.outbox.oldestAgeSeconds)),
      };
      out(
        stats,
        `${rows.map((r) => `${r.status}: ${r.n}`).join('  ') || 'empty'}\noldest not done: ${Math.round(stats.oldestNotDoneSeconds)} s`,
      );
    });
}

/** `dlq:list`: dead letters (outbox rows that failed for good), newest first. */
function dlqList(program: Command): void {
  program
    .command('dlq:list')
    .description('dead letters (outbox rows that failed for good), newest first')
    .action(async () => {
      const prisma = await db();
      const { deadLetterRows, refusedForGood } = await dbLib.outbox();
      const rows = await deadLetterRows(prisma, 500);
      const permanent = await Promise.all(rows.map((r) => refusedForGood(prisma, r.invoiceId)));
      out(
        rows.map((r, i) => ({
          outboxId: r.id,
          invoiceId: r.invoiceId,
          serieFolio: `${r.invoice.serie}-${r.invoice.folio}`,
          attempts: r.attempts,
          lastError: r.lastError,
          failedAt: r.updatedAt,
          permanent: permanent[i],
        })),
        rows.length === 0
          ? 'no dead letters'
          : rows
              .map(
                (r, i) =>
                  `${r.id}  ${r.invoice.serie}-${r.invoice.folio}  attempts=${r.attempts}  ${r.lastError ?? ''}${
                    permanent[i] ? '  — permanent: correct it (PATCH / invoice:correct); dlq:retry needs --force' : ''
                  }`,
              )
              .join('\n'),
      );
    });
}

/** `dlq:retry`: re-drive dead letters: back to pending with the same frozen bytes, recorded (you, now, --reason) in the invoice history. */
function dlqRetry(program: Command): void {
  program
    .command('dlq:retry')
    .description(
      're-drive dead letters: back to pending with the same frozen bytes, recorded (you, now, --reason) in the invoice history',
    )
    .argument('[outboxId]', 'the dead letter (an outbox id from dlq:list)', uuidArg('outboxId'))
    .option('--all', 'every dead letter')
    .option('--reason <text>', 'why, for the audit trail')
    .option('--force', 'resend even what a PAC refused for good (permanent: correct the invoice instead)')
    .action(async (outboxId: string | undefined, options: { all?: boolean; reason?: string; force?: boolean }) => {
      if (!outboxId === !options.all) throw new UsageError('dlq:retry: give an outbox id or --all (not both)');
      const prisma = await db();
      const { deadLetterIds, redriveDeadLetter } = await dbLib.outbox();
      const ids = options.all ? await deadLetterIds(prisma) : [outboxId!];
      const queue = ids.length > 0 ? await deadLetterQueue() : undefined;
      const by = `ops:${env().TIMBRA_OPERATOR ?? userInfo().username}`;
      const results = [];
      try {
        for (const id of ids) {
          // Written in the letter's organization's name (its history row is its own).
          const organization = await organizationOfRow('outbox', id);
          const on = organization ? await organizationDb(organization) : prisma;
          results.push({
            id,
            ...(await redriveDeadLetter(on, id, { by, reason: options.reason, force: options.force }, queue?.dlq)),
          });
        }
      } finally {
        await queue?.close();
      }
      out(
        results,
        results
          .map((r) =>
            r.ok
              ? `${r.id}  re-driven: pending${r.settled === undefined || r.settled === 'later' ? ' (its letter in stamp-dlq is settled by the worker)' : ''}`
              : r.reason === 'permanent_rejection'
                ? `${r.id}  not re-driven: permanent — the PAC refused it for good (${r.lastError ?? 'no reason kept'}): correct it (PATCH /v1/invoices/${r.invoiceId}, or npm run ops -- invoice:correct), or --force to resend the same bytes`
                : `${r.id}  not re-driven: ${r.reason}`,
          )
          .join('\n') || 'no dead letters',
      );
      setExitCode(results.some((r) => !r.ok) ? 1 : 0);
    });
}

export function outboxCommands(program: Command): void {
  outboxStats(program);
  dlqList(program);
  dlqRetry(program);
}
