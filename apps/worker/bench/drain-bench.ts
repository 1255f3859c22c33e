/**
 * `npm run bench:drain [-- --rows N --concurrency C --database-url URL --json]` — loads N frozen outbox rows, starts the relay and
 * the stamp worker against the sandbox (its own process, no injected latency) and measures stamped
 * invoices per second until the backlog is empty. Beside it, measured in the same run: the sandbox's
 * own stamp rate through the SW client, and the pgbench rate of the worker's commit shape (invoice
 * update + outbox update + PAC-attempt insert). Then again with 100 ms of PAC latency, where
 * throughput should approach concurrency / latency. Target: drain ≥ 50% of the lower ceiling.
 *
 * `--database-url` drains on an existing (migrated) database and leaves it there, and `--json` prints
 * the drain rate alone as one JSON line (bench:history compares it with and without history).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { pino } from 'pino';
import { freezeComprobante } from '@timbra/cfdi-core';
import { TEST_EMISOR, loadTestCsd } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase } from '@timbra/db/testing';
import { createWorker } from '../src/create-worker.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import { redisFor, startSandboxProcess, swClients, type SandboxProcess } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '32' },
    'database-url': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
// Each run's documents have their own serie and keys, so runs can share a database.
const run = randomBytes(2).toString('hex');
const rows = Number(values.rows);
const concurrency = Number(values.concurrency);
const csd = loadTestCsd('EKU9003173C9');
const say = (line: string) => process.stdout.write(`${line}\n`);

function freeze(i: number, tag: string) {
  return freezeComprobante(
    {
      tipoDeComprobante: 'I',
      sourceId: `drain-${run}-${tag}-${i}`,
      issuedAt: new Date(Date.now() - 60_000).toISOString(),
      serie: 'D',
      folio: String(i + 1),
      lugarExpedicion: '42501',
      formaPago: '04',
      metodoPago: 'PUE',
      emisor: { ...TEST_EMISOR },
      receptor: {
        rfc: 'XAXX010101000',
        nombre: 'PUBLICO EN GENERAL',
        domicilioFiscalReceptor: '42501',
        regimenFiscalReceptor: '616',
        usoCFDI: 'S01',
      },
      informacionGlobal: { periodicidad: '01', meses: '11', año: 2026 },
      conceptos: [
        {
          claveProdServ: '01010101',
          cantidad: '1',
          claveUnidad: 'ACT',
          descripcion: 'Venta',
          valorUnitario: '100.00',
          objetoImp: '02',
          traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
        },
      ],
    },
    csd,
  );
}

async function load(prisma: PrismaClient, n: number, tag: string): Promise<void> {
  const emisor = await prisma.emisor.upsert({
    where: { rfc: 'EKU9003173C9' },
    create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    update: {},
  });
  for (let start = 0; start < n; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - start) }, (_, k) => freeze(start + k, tag));
    const invoices = batch.map((f, k) => ({
      id: crypto.randomUUID(),
      organizationId: emisor.id,
      kind: 'I',
      serie: `D${run}${tag}`,
      folio: start + k + 1,
      fecha: f.fecha,
      moneda: 'MXN',
      subTotal: f.subTotal,
      total: f.total,
      status: 'pending' as const,
      stampKey: f.stampKey,
      frozenXml: f.xml,
      cadenaOriginal: f.cadenaOriginal,
    }));
    await prisma.invoice.createMany({ data: invoices });
    await prisma.outboxRow.createMany({
      data: invoices.map((i) => ({ kind: 'stamp', invoiceId: i.id, stampKey: i.stampKey })),
    });
  }
}

async function drain(prisma: PrismaClient, sandbox: SandboxProcess, n: number, tag: string): Promise<number> {
  await load(prisma, n, tag);
  const redis = redisFor();
  const w = createWorker(
    {
      prisma,
      redis,
      prefix: `{drain${randomBytes(3).toString('hex')}}`,
      chain: new PacChain(swClients(sandbox, { connectMs: 2_000, responseMs: 10_000 }), {
        threshold: 5,
        coolDownMs: 5_000,
      }),
      retry: { attempts: 10, baseDelayMs: 100, maxDelayMs: 2_000 },
      concurrency,
      relayBatchSize: 500,
      logger: pino({ level: 'error' }),
    },
    { autorun: false },
  );
  const start = process.hrtime.bigint();
  void w.worker.run();
  await w.relay.drainAll();
  for (;;) {
    const left = await prisma.outboxRow.count({
      where: { status: { not: 'done' }, invoice: { serie: `D${run}${tag}` } },
    });
    if (left === 0) break;
    if (left > 0 && (await prisma.outboxRow.count({ where: { status: 'pending' } })) > 0) await w.relay.drainAll();
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await w.close();
  await redis.quit();
  return n / seconds;
}

async function sandboxRate(sandbox: SandboxProcess, n: number): Promise<number> {
  const [client] = swClients(sandbox, { connectMs: 2_000, responseMs: 10_000 });
  const docs = Array.from({ length: n }, (_, i) => {
    const f = freeze(i, `ceiling${randomBytes(2).toString('hex')}`);
    return { xml: f.xml, key: f.stampKey };
  });
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < docs.length) {
        const d = docs[next++]!;
        await client!.stamp(d.xml, { idempotencyKey: d.key });
      }
    }),
  );
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

function pgbenchCommitShape(url: string, seconds: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-pgbench-'));
  try {
    writeFileSync(
      join(dir, 'commit.sql'),
      [
        '\\set n random(1, 1000000)',
        'BEGIN;',
        `UPDATE bench_invoices SET uuid = gen_random_uuid()::text, tfd_xml = repeat('t', 1200), stamped_xml = repeat('s', 7000), pac = 'primary', stamped_at = now(), status = 'stamped' WHERE id = :n;`,
        `UPDATE bench_outbox SET status = 'done', attempts = attempts + 1 WHERE id = :n;`,
        `INSERT INTO bench_attempts (invoice_id, pac, outcome, duration_ms) VALUES (:n, 'primary', 'stamped', 12);`,
        'COMMIT;',
      ].join('\n'),
    );
    const u = new URL(url);
    const args = [
      '-h',
      u.hostname,
      '-p',
      u.port || '5432',
      '-U',
      decodeURIComponent(u.username) || 'postgres',
      u.pathname.slice(1),
    ];
    execFileSync('psql', [
      ...args,
      '-qc',
      `CREATE TABLE bench_invoices (id int PRIMARY KEY, uuid text, tfd_xml text, stamped_xml text, pac text, stamped_at timestamptz, status text);
      CREATE TABLE bench_outbox (id int PRIMARY KEY, status text, attempts int DEFAULT 0);
      CREATE TABLE bench_attempts (id bigserial PRIMARY KEY, invoice_id int, pac text, outcome text, duration_ms int);
      INSERT INTO bench_invoices (id, status) SELECT g, 'pending' FROM generate_series(1, 1000000) g;
      INSERT INTO bench_outbox (id, status) SELECT g, 'pending' FROM generate_series(1, 1000000) g;`,
    ]);
    const out = execFileSync(
      'pgbench',
      [
        '-n',
        '-c',
        String(Math.min(concurrency, 16)),
        '-j',
        '2',
        '-T',
        String(seconds),
        '-f',
        join(dir, 'commit.sql'),
        ...args,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sandbox = await startSandboxProcess();
const given = values['database-url'];
const db = given ? { url: given, drop: () => Promise.resolve() } : await createTestDatabase();
const prisma = createPrisma(db.url, { poolSize: 20 });
if (values.json) {
  try {
    const fast = await drain(prisma, sandbox, rows, 'a');
    process.stdout.write(`${JSON.stringify({ drainRate: fast, rows })}\n`);
  } finally {
    await prisma.$disconnect();
    await db.drop();
    await sandbox.stop();
  }
  process.exit(0);
}
try {
  say(
    `bench:drain — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
  );
  say(
    `${rows} frozen outbox rows, worker concurrency ${concurrency}, relay + worker in this process, sandbox in its own`,
  );
  const ceilingSandbox = await sandboxRate(sandbox, Math.min(2000, Math.max(300, Math.floor(rows / 5))));
  const ceilingPg = pgbenchCommitShape(db.url, 5);
  const fast = await drain(prisma, sandbox, rows, 'a');
  await sandbox.admin('faults', { instance: 'primary', latencyMs: 100 });
  const slowRows = Math.min(rows, concurrency * 20);
  const slow = await drain(prisma, sandbox, slowRows, 'b');
  const ceiling = Math.min(ceilingSandbox, ceilingPg);
  say('');
  say(`  drain, no injected latency          ${fast.toFixed(0).padStart(7)} stamped/s`);
  say(`  ceiling: sandbox via SW client      ${ceilingSandbox.toFixed(0).padStart(7)} stamps/s   ← reference`);
  say(`  ceiling: pgbench, commit shape      ${ceilingPg.toFixed(0).padStart(7)} tps        ← reference`);
  say(
    `  drain, 100 ms PAC latency           ${slow.toFixed(0).padStart(7)} stamped/s   (concurrency / latency = ${(concurrency / 0.1).toFixed(0)}; ${slowRows} rows)`,
  );
  say('');
  say(
    `  drain / lower ceiling = ${((fast / ceiling) * 100).toFixed(1)}%   (target ≥ 50%)  ${fast / ceiling >= 0.5 ? 'OK' : 'MISSED'}`,
  );
} finally {
  await prisma.$disconnect();
  await db.drop();
  await sandbox.stop();
}
