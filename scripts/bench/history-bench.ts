/**
 * `npm run bench:history [-- --invoices N --seconds S --rows R --concurrency C --retention defaults|off --keep]` — do the hot
 * paths stay flat as history piles up? On one database, first empty, then with N stamped invoices of
 * history (default 10 million) and their payments, outbox rows, PAC calls and provider events, plus a
 * day's Idempotency-Key records: ingest through the API (bench:ingest), the relay's claim and the other
 * statements the worker runs every few seconds (the sweeper's, the gauges', an invoice by UUID), and
 * the drain (bench:drain). Target: each within 10% of its empty-database figure.
 *
 * History is written in SQL (generate_series, in chunks of a million, one transaction each), not
 * through the API: 10 M invoices through the API would take hours. Triggers are off while it is written
 * (session_replication_role = replica: the rows are consistent by construction). Its documents carry
 * ~0.7 KB of XML instead of a real CFDI's 3–8 KB: the hot paths read indexes, not the XML, and a real
 * size would need ~100 GB of disk for 10 M invoices.
 *
 * `--retention defaults` (the default): the history is what the worker's retention rules leave with
 * their default settings (DEFAULT_RETENTION): every invoice and payment, but done outbox rows and
 * provider events of the last 30 days only and PAC calls of the last 180 — a dry run of the rules
 * (pruneHistory) must then find nothing to delete. `--retention off`: every row kept, as with
 * RETENTION_*_DAYS=0 — the worst case.
 */
import { execFile } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { invoiceByUuid, invoicesWithOverdueDependents, replacementsAwaitingCancellation } from '@timbra/db/invoices';
import { claimOutboxBatch, staleEnqueuedOutboxRows } from '@timbra/db/outbox';
import { backlogEverywhere } from '@timbra/db/organizations';
import { DEFAULT_RETENTION, type RetentionPolicy } from '@timbra/db/retention';
import { createTestDatabase } from '@timbra/db/testing';
import { percentile } from '@timbra/test-support';
import { writeHistory } from '../lib/history.ts';

const { values } = parseArgs({
  options: {
    invoices: { type: 'string', default: '10000000' },
    seconds: { type: 'string', default: '10' },
    rows: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '16' },
    chunk: { type: 'string', default: '1000000' },
    /** defaults: the history the retention rules leave with their default settings; off: every row kept. */
    retention: { type: 'string', default: 'defaults' },
    /** Keep the database (its URL is printed) to look at it, or to run other benchmarks on it. */
    keep: { type: 'boolean', default: false },
  },
});
const invoices = Number(values.invoices);
const chunk = Number(values.chunk);
if (values.retention !== 'defaults' && values.retention !== 'off')
  throw new Error(`--retention is defaults or off, not ${values.retention}`);
const retention: RetentionPolicy | undefined = values.retention === 'defaults' ? DEFAULT_RETENTION : undefined;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const say = (line: string) => process.stdout.write(`${line}\n`);
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/** Runs one of the repository's benchmarks with --json on this database; its last line is the figures. */
function benchJson<T>(script: string, args: string[], databaseUrl: string): Promise<T> {
  return new Promise((done, fail) => {
    execFile(
      'npm',
      ['run', '--silent', script, '--', ...args, '--json', '--database-url', databaseUrl],
      { cwd: root, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LOG_LEVEL: 'error' } },
      (error, stdout, stderr) => {
        if (error) return fail(new Error(`${script} failed: ${stderr || error.message}`));
        const last = stdout.trim().split('\n').at(-1) ?? '';
        try {
          done(JSON.parse(last) as T);
        } catch {
          fail(new Error(`${script} printed no figures: ${stdout.slice(-500)}`));
        }
      },
    );
  });
}

/**
 * The statements the worker runs all day, timed on this database (each the function the worker calls,
 * from @timbra/db): with 1 000 pending outbox rows written for the purpose, in a transaction that is
 * rolled back at the end. @returns p50 in ms per statement.
 */
async function hotStatements(prisma: PrismaClient, organizationId: string, uuid: string | undefined) {
  const times: Record<string, number[]> = { claim: [], sweeper: [], sweeperInvoices: [], gauges: [], byUuid: [] };
  const rollback = new Error('rollback');
  // (available_at is stored to the millisecond: a second back, so this transaction's now() is past it.)
  await prisma
    .$transaction(
      async (tx) => {
        const serie = `Q${Math.random().toString(36).slice(2, 8)}`;
        await tx.$executeRaw`
          INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
          SELECT timbra_uuid7(), ${organizationId}::uuid, 'I', ${serie}, g, 'MXN', 100, 116, 'pending', ${serie} || '-' || g, '<x/>'
          FROM generate_series(1, 1000) g`;
        await tx.$executeRaw`
          INSERT INTO outbox (id, kind, invoice_id, stamp_key, available_at)
          SELECT timbra_uuid7(), 'stamp', i.id, i.stamp_key, now() - interval '1 second'
          FROM invoices i WHERE i.organization_id = ${organizationId}::uuid AND i.serie = ${serie}`;
        for (let i = 0; i < 300; i++) {
          await tx.$executeRaw`SAVEPOINT claim`;
          let t = process.hrtime.bigint();
          const claimed = await claimOutboxBatch(tx, 100);
          times.claim!.push(ms(t));
          if (claimed.length !== 100) throw new Error(`the claim took ${claimed.length} rows, not 100`);
          await tx.$executeRaw`ROLLBACK TO SAVEPOINT claim`;
          t = process.hrtime.bigint();
          await staleEnqueuedOutboxRows(tx, 300_000, 100);
          times.sweeper!.push(ms(t));
          // Its questions about invoices: replacements whose original awaits cancellation, overdue dependents.
          t = process.hrtime.bigint();
          await replacementsAwaitingCancellation(tx, 100);
          await invoicesWithOverdueDependents(tx, 100);
          times.sweeperInvoices!.push(ms(t));
          t = process.hrtime.bigint();
          // The worker's backlog gauges: one statement a scrape, every organization's figures.
          await backlogEverywhere(tx, { windowMs: 72 * 3_600_000, marginMs: 12 * 3_600_000 }, organizationId);
          times.gauges!.push(ms(t));
          if (uuid) {
            t = process.hrtime.bigint();
            if (!(await invoiceByUuid(tx, uuid.toLowerCase()))) throw new Error(`no invoice ${uuid}`);
            times.byUuid!.push(ms(t));
          }
        }
        throw rollback;
      },
      { timeout: 600_000, maxWait: 10_000 },
    )
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  const p50 = (name: string) => {
    const sorted = times[name]!.sort((a, b) => a - b);
    return sorted.length > 0 ? percentile(sorted, 50) : Number.NaN;
  };
  return {
    claim: p50('claim'),
    sweeper: p50('sweeper'),
    sweeperInvoices: p50('sweeperInvoices'),
    gauges: p50('gauges'),
    byUuid: p50('byUuid'),
  };
}

interface Figures {
  ingest: number;
  ingestP99: number;
  /** Postgres's CPU (ms) and WAL (KiB) a payment of the ingest: steadier than its rate on a shared machine. */
  ingestPostgresCpu: number;
  ingestWal: number;
  claim: number;
  sweeper: number;
  sweeperInvoices: number;
  gauges: number;
  byUuid: number;
  drain: number;
}

async function measure(prisma: PrismaClient, organizationId: string, databaseUrl: string, uuid: string | undefined) {
  // Each measurement starts from a vacuumed, checkpointed database, as autovacuum and the
  // checkpointer keep a steady one: the previous round's updated rows (dead index entries in the
  // outbox's partial indexes) and its WAL are not what is measured.
  await prisma.$executeRawUnsafe('VACUUM ANALYZE');
  await prisma.$executeRawUnsafe('CHECKPOINT');
  const hot = await hotStatements(prisma, organizationId, uuid);
  say(`    relay claim ${hot.claim.toFixed(2)} ms`);
  const drain = await benchJson<{ drainRate: number }>('bench:drain', ['--rows', values.rows], databaseUrl);
  say(`    drain ${drain.drainRate.toFixed(0)} stamped/s`);
  const ingest = await benchJson<{
    ingestRate: number;
    p99: number;
    committed: number;
    cpu: { postgres: number };
    walPerPayment: number;
  }>('bench:ingest', ['--seconds', values.seconds, '--concurrency', values.concurrency], databaseUrl);
  say(`    ingest ${ingest.ingestRate.toFixed(0)} payments/s`);
  // No worker ran during the ingest: its invoices are written stamped and their rows done, as a
  // worker would leave them, so the next measurement starts clean. (Left pending, each round's
  // thousands of invoices were read by the late-invoices gauge of the next: +37–95% that was the
  // benchmark's own leftovers, not history.) Triggers off, as history is written.
  await prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe("SET LOCAL session_replication_role = 'replica'");
      await tx.$executeRawUnsafe(
        `UPDATE invoices SET status = 'stamped', uuid = upper(gen_random_uuid()::text), tfd_xml = '<t/>',
                           pac = 'primary', stamped_at = now()
       WHERE status = 'pending'`,
      );
      await tx.$executeRawUnsafe(`UPDATE outbox SET status = 'done' WHERE status = 'pending'`);
    },
    { timeout: 120_000 },
  );
  return {
    ingest: ingest.ingestRate,
    ingestP99: ingest.p99,
    ingestPostgresCpu: ingest.cpu.postgres / ingest.committed,
    ingestWal: ingest.walPerPayment / 1024,
    ...hot,
    drain: drain.drainRate,
  } satisfies Figures;
}

const db = await createTestDatabase();
const prisma = createPrisma(db.url, { poolSize: 4 });
try {
  say(
    `bench:history — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
  );
  say(
    `${invoices.toLocaleString('en')} invoices of history (retention ${values.retention}); ingest ${values.seconds} s at concurrency ${values.concurrency}, drain of ${values.rows} rows`,
  );
  const emisor = await prisma.emisor.upsert({
    where: { rfc: 'EKU9003173C9' },
    create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    update: {},
  });
  // A warm-up round, not reported: both measurements then see a database that has worked (the
  // outbox's pages hold the free space its updates leave, as in production), not a pristine one.
  say('  warm-up round (not reported):');
  await measure(prisma, emisor.id, db.url, undefined);
  say('  empty database:');
  const empty = await measure(prisma, emisor.id, db.url, undefined);
  say('  writing history:');
  await writeHistory({
    prisma,
    databaseUrl: db.url,
    organizationId: emisor.id,
    invoices,
    chunk,
    retention,
    say,
  });
  // An invoice from the middle of history, looked up by UUID as reconcile and cancellations do.
  const probe = await prisma.invoice.findFirstOrThrow({
    where: { serie: 'H', folio: Math.ceil(invoices / 2) },
    select: { uuid: true },
  });
  say(`  with ${invoices.toLocaleString('en')} invoices of history:`);
  const full = await measure(prisma, emisor.id, db.url, probe.uuid ?? undefined);

  // The last two ingest rows explain the rate (figures, not targets): the WAL grows with history
  // because each insert into a large index of ids in no order dirties a page of its own, written
  // whole to the WAL at its first change after a checkpoint (docs/performance.md).
  const rows: [string, keyof Figures, 'higher' | 'lower', string, 'target' | 'figure'][] = [
    ['ingest (API, committed payments/s)', 'ingest', 'higher', '/s', 'target'],
    ['ingest p99 latency', 'ingestP99', 'lower', ' ms', 'target'],
    ["ingest: Postgres's CPU a payment", 'ingestPostgresCpu', 'lower', ' ms CPU', 'figure'],
    ['ingest: WAL a payment', 'ingestWal', 'lower', ' KiB', 'figure'],
    ['relay claim of 100 rows (p50)', 'claim', 'lower', ' ms', 'target'],
    ["sweeper's stale rows (p50)", 'sweeper', 'lower', ' ms', 'target'],
    ["sweeper's invoice questions (p50)", 'sweeperInvoices', 'lower', ' ms', 'target'],
    ['backlog gauges (p50)', 'gauges', 'lower', ' ms', 'target'],
    ['drain (stamped/s)', 'drain', 'higher', '/s', 'target'],
  ];
  say('');
  say(`  ${'figure'.padEnd(38)}${'empty'.padStart(12)}${'history'.padStart(14)}   change   (target: within 10%)`);
  for (const [label, key, better, unit, kind] of rows) {
    const a = empty[key];
    const b = full[key];
    const change = (b - a) / a;
    const worse = better === 'higher' ? -change : change;
    // Sub-millisecond statements: a change under 0.1 ms is timer noise, not history.
    const ok = worse <= 0.1 || (unit === ' ms' && b - a < 0.1);
    say(
      `  ${label.padEnd(38)}${`${a.toFixed(unit === '/s' ? 0 : 2)}${unit}`.padStart(12)}${`${b.toFixed(unit === '/s' ? 0 : 2)}${unit}`.padStart(14)}   ${`${change >= 0 ? '+' : ''}${(change * 100).toFixed(1)}%`.padStart(6)}   ${kind === 'figure' ? '(figure)' : ok ? 'OK' : 'MISSED'}`,
    );
  }
  say(
    `  ${'invoice by UUID (p50, history only)'.padEnd(38)}${''.padStart(12)}${`${full.byUuid.toFixed(2)} ms`.padStart(14)}`,
  );
  say('');
} finally {
  await prisma.$disconnect();
  if (values.keep) say(`database kept: ${db.url}`);
  else await db.drop();
}
