/**
 * `npm run ops -- <command>` — operations on the stamping pipeline (the full ops CLI grows here):
 *   dlq:list              dead-lettered outbox rows (failed), newest first
 *   dlq:retry <outboxId>  put a dead-lettered row back to pending (same frozen bytes)
 *   dlq:retry --all       every dead-lettered row
 * Options: --json. Exit 0 on success, 1 on a problem, 64 on bad usage. Needs DATABASE_URL.
 */
import { parseArgs } from 'node:util';
import { createPrisma, redriveOutboxRow } from '@timbra/db';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { all: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
});
const out = (value: unknown, text: string) => process.stdout.write(`${values.json ? JSON.stringify(value) : text}\n`);
const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is not set\n');
  process.exit(1);
}
const prisma = createPrisma(url, { poolSize: 2 });
const [command, target] = positionals;

try {
  if (command === 'dlq:list') {
    const rows = await prisma.outboxRow.findMany({
      where: { status: 'failed' },
      orderBy: { updatedAt: 'desc' },
      take: 500,
      include: { invoice: { select: { serie: true, folio: true } } },
    });
    out(
      rows.map((r) => ({
        outboxId: r.id,
        invoiceId: r.invoiceId,
        serieFolio: `${r.invoice.serie}-${r.invoice.folio}`,
        attempts: r.attempts,
        lastError: r.lastError,
        failedAt: r.updatedAt,
      })),
      rows.length === 0
        ? 'no dead letters'
        : rows
            .map((r) => `${r.id}  ${r.invoice.serie}-${r.invoice.folio}  attempts=${r.attempts}  ${r.lastError ?? ''}`)
            .join('\n'),
    );
  } else if (command === 'dlq:retry' && (target || values.all)) {
    const ids = values.all
      ? (await prisma.outboxRow.findMany({ where: { status: 'failed' }, select: { id: true } })).map((r) => r.id)
      : [target!];
    const results = [];
    for (const id of ids) results.push({ id, ...(await redriveOutboxRow(prisma, id)) });
    const failed = results.filter((r) => !r.ok);
    out(
      results,
      results
        .map((r) => `${r.id}  ${r.ok ? 're-driven: pending' : `not re-driven: ${'reason' in r ? r.reason : ''}`}`)
        .join('\n') || 'no dead letters',
    );
    process.exitCode = failed.length > 0 ? 1 : 0;
  } else {
    process.stderr.write('usage: npm run ops -- dlq:list | dlq:retry <outboxId> | dlq:retry --all  [--json]\n');
    process.exitCode = 64;
  }
} finally {
  await prisma.$disconnect();
}
