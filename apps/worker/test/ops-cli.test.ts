/**
 * `npm run ops` as an operator meets it: help for every command without a database, usage mistakes
 * exit 2 with a message (never a stack trace), `--since` takes ISO times and durations and refuses
 * anything else, `reconcile` refuses to give an all-clear it cannot back (exit 3), and a re-drive is
 * recorded with who did it and settles the letter in stamp-dlq at once; stamped XML stored twice is
 * forgotten only where its rebuild is the same bytes.
 *
 * @clock csd:check reads the SAT's own test certificate (valid until 2027-05-18); --since and history:prune ages
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { deadLetterOutboxRow, STAMP_DLQ } from '@timbra/db/outbox';
import { createTestDatabase, databaseNow, type TestDatabase } from '@timbra/db/testing';
import { insertTfd, parseStampedCfdi, stampedXmlOf } from '@timbra/cfdi-core';
import { SAT_DIR, satTestCertificatePath, testTfd } from '@timbra/test-support';
import { createDeadLetterConsumer } from '../src/stamping/dead-letters.ts';
import { parseSince } from '../src/operations/since.ts';
import { copyVerdict } from '../src/ops/history-commands.ts';
import { pino } from 'pino';
import {
  ADMIN_TOKEN,
  eventually,
  freePort,
  pendingInvoice,
  redisFor,
  opsHere,
  runOps,
  startSandboxProcess,
  type SandboxProcess,
} from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
const redis = redisFor();
const prefix = `{tops${randomBytes(4).toString('hex')}}`;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
  sandbox = await startSandboxProcess();
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await db.drop();
});

// In this process (opsHere); runOps starts the CLI as an operator's shell does.
const ops = (args: string[], env: Record<string, string> = {}) => opsHere(db.url, args, env);

describe('npm run ops: usage', () => {
  it('--help and -h list every command, without a database; a command explains itself', async () => {
    for (const flag of ['--help', '-h']) {
      const help = await runOps(undefined, [flag]);
      expect(help.status).toBe(0);
      for (const command of [
        'outbox:stats',
        'dlq:list',
        'dlq:retry',
        'invoice:show',
        'keys:create',
        'reconcile',
        'history:prune',
        'stamped-xml:compact',
      ])
        expect(help.stdout).toContain(command);
      expect(help.stdout).toMatch(/Exit codes: 0 done; 1 .*; 2 bad usage; 3 could not check/);
    }
    const one = await opsHere(undefined, ['reconcile', '--help']);
    expect(one.status).toBe(0);
    expect(one.stdout).toMatch(/--ledger-url <url>/);
    expect(one.stdout).toMatch(/--since <when>/);
  });

  it('bad usage exits 2 with a message and no stack trace', async () => {
    for (const args of [
      [],
      ['no-such-command'],
      ['dlq:retry', 'not-a-uuid'],
      ['dlq:retry'],
      ['invoice:show'],
      ['webhooks:failed', '--since', 'yesterday'],
      ['reconcile', '--ledger-url', 'http://127.0.0.1:1'],
      ['keys:list', '--bogus'],
      ['keys:create', 'bad name!'],
    ]) {
      const run = await ops(args);
      expect({ args, status: run.status }).toEqual({ args, status: 2 });
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr.trim().length).toBeGreaterThan(0);
    }
    expect((await ops(['dlq:retry', 'not-a-uuid'])).stderr).toMatch(/outboxId is a UUID/);
    expect((await ops(['webhooks:failed', '--since', 'yesterday'])).stderr).toMatch(
      /ISO 8601 date or time .* or a duration \(30m, 12h, 7d, 2w\)/,
    );
  });

  it('an unknown invoice is a problem (exit 1), not a crash; no DATABASE_URL says what to set', async () => {
    const missing = await ops(['invoice:show', 'ZZ-404']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe('no invoice ZZ-404\n');
    const unset = await runOps(undefined, ['outbox:stats']);
    expect(unset.status).toBe(3);
    expect(unset.stderr).toMatch(/DATABASE_URL/);
    expect(unset.stderr).not.toMatch(/\n\s+at /);
  });

  it("a database down, missing or not migrated: exit 3 with one line that says what to fix, not Prisma's report", async () => {
    const absent = new URL(db.url);
    absent.pathname = `/timbra_absent_${randomBytes(4).toString('hex')}`;
    const down = new URL(db.url);
    down.port = String(await freePort());
    const bare = await createTestDatabase({ migrated: false });
    try {
      const runs = await Promise.all([
        runOps(absent.toString(), ['dlq:list']),
        runOps(down.toString(), ['outbox:stats']),
        runOps(bare.url, ['invoice:show', 'A-1']),
      ]);
      expect(runs.map((r) => [r.status, r.stdout, r.stderr])).toEqual([
        [
          3,
          '',
          `ops: the database "${absent.pathname.slice(1)}" does not exist: create and migrate it with \`npm run db:migrate -- --create-db\`\n`,
        ],
        [3, '', `ops: cannot reach Postgres at 127.0.0.1:${down.port}: is it running, and is DATABASE_URL right?\n`],
        [3, '', expect.stringMatching(/^ops: the database is not migrated \(.*\): run `npm run db:migrate`\n$/)],
      ]);
    } finally {
      await bare.drop();
    }
  });

  it('reads DATABASE_URL from DATABASE_URL_FILE, like the apps', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ops-secret-')), 'database-url');
    writeFileSync(file, `${db.url}\n`);
    const run = await opsHere(undefined, ['outbox:stats', '--json'], { DATABASE_URL_FILE: file });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toHaveProperty('byStatus');
  });
});

describe('--since', () => {
  const now = Date.parse('2026-11-30T12:00:00Z');
  it.each([
    ['2026-11-29', '2026-11-29T00:00:00.000Z'],
    ['2026-11-29T08:30:00Z', '2026-11-29T08:30:00.000Z'],
    ['2026-11-29T08:30:00-06:00', '2026-11-29T14:30:00.000Z'],
    ['30m', '2026-11-30T11:30:00.000Z'],
    ['12h', '2026-11-30T00:00:00.000Z'],
    ['7d', '2026-11-23T12:00:00.000Z'],
    ['2w', '2026-11-16T12:00:00.000Z'],
  ])('%s → %s', (value, iso) => {
    expect(parseSince(value, now).toISOString()).toBe(iso);
  });
  it.each(['yesterday', '', '7', '1y', '2026-13-45', 'now', '-1d'])('refuses %j', (value) => {
    expect(() => parseSince(value, now)).toThrow(/ISO 8601/);
  });
});

describe('reconcile never gives an all-clear it cannot back', () => {
  const args = (...more: string[]) => [
    'reconcile',
    '--ledger-url',
    sandbox.adminUrl,
    '--admin-token',
    ADMIN_TOKEN,
    ...more,
  ];

  it('exits 3 when the window starts before what the ledger covers, or the ledger cannot be read', async () => {
    const before = await ops(args('--since', '2000-01-01'));
    expect(before.status).toBe(3);
    expect(before.stderr).toMatch(/the PAC ledger covers only since \S+; the window asked for starts 2000-01-01/);
    const unreachable = await ops([
      'reconcile',
      '--ledger-url',
      `http://127.0.0.1:${await freePort()}`,
      '--admin-token',
      ADMIN_TOKEN,
    ]);
    expect(unreachable.status).toBe(3);
    expect(unreachable.stderr).toMatch(/cannot read the PAC ledger/);
    const refused = await ops(['reconcile', '--ledger-url', sandbox.adminUrl, '--admin-token', 'wrong-token']);
    expect(refused.status).toBe(3);
  });

  it('within the ledger: a clean window exits 0 and says what it covered', async () => {
    const run = await ops(args('--since', new Date().toISOString(), '--json'));
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ orphans: [], duplicates: [], coversSince: expect.any(String) });
  });
});

describe('dlq:retry', () => {
  it('re-drives with who and why on record, and settles the letter in stamp-dlq at once', async () => {
    const p = await pendingInvoice(prisma, 'ops-redrive');
    await prisma.outboxRow.update({ where: { id: p.outboxId }, data: { status: 'enqueued' } });
    const { failedAt } = (await deadLetterOutboxRow(
      prisma,
      { outboxId: p.outboxId, invoiceId: p.invoiceId },
      '402: LCO',
    ))!;
    // The letter as the worker leaves it: in the failed set of stamp-dlq, held there by its consumer.
    const dlq = new Queue(STAMP_DLQ, { connection: redis, prefix });
    const consumer = createDeadLetterConsumer(
      { prismaFor: () => Promise.resolve(prisma), redis, prefix, logger: pino({ level: 'silent' }) },
      { autorun: true },
    );
    try {
      await dlq.add('dead-letter', {
        outboxId: p.outboxId,
        stampKey: p.stampKey,
        invoiceId: p.invoiceId,
        reason: 'LCO',
        code: '402',
        failedAt: failedAt.toISOString(),
      });
      await eventually(async () => (await dlq.getFailedCount()) === 1);

      const run = await ops(['dlq:retry', p.outboxId, '--reason', 'LCO fixed', '--json'], {
        QUEUE_PREFIX: prefix,
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        TIMBRA_OPERATOR: 'ana',
      });
      expect(run.status).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ ok: true, settled: 1 })]);
      expect(await prisma.outboxRedrive.findMany({ where: { outboxId: p.outboxId } })).toEqual([
        expect.objectContaining({ by: 'ops:ana', reason: 'LCO fixed', lastError: '402: LCO' }),
      ]);
      // Out of the failed set at once; its consumer completes it with the re-drive.
      expect(await dlq.getFailedCount()).toBe(0);
      await eventually(async () => (await dlq.getCompletedCount()) === 1);
      expect((await dlq.getCompleted())[0]!.returnvalue).toMatchObject({ settled: 'redriven', redrivenBy: 'ops:ana' });
      expect((await ops(['invoice:show', p.invoiceId])).stdout).toMatch(/re-driven by ops:ana \(LCO fixed\)/);
    } finally {
      await consumer.close();
      await dlq.close();
    }
  });
});

describe('deliveries:list and deliveries:replay', () => {
  it('lists the dead emails and webhooks with their reasons, and replays one as the operator', async () => {
    const endpoint = await prisma.webhookEndpoint.create({
      data: { url: 'https://erp.example.com/hook', events: ['payment.recorded'], secret: 'whsec_test' },
    });
    const other = await prisma.payment.create({
      data: {
        provider: 'api:ops',
        externalId: `ops2-${Date.now()}`,
        amount: '1.16',
        currency: 'MXN',
        occurredAt: new Date(),
      },
    });
    const [delivery] = await prisma.delivery.findMany({
      where: { endpointId: endpoint.id, event: { paymentId: other.id } },
    });
    expect(delivery).toBeDefined();
    await prisma.delivery.update({
      where: { id: delivery!.id },
      data: { status: 'dead', attempts: 9, lastError: 'HTTP 500' },
    });

    const list = await ops(['deliveries:list', '--channel', 'webhook']);
    expect(list.status).toBe(0);
    expect(list.stdout).toContain(`${delivery!.id}  webhook  payment.recorded`);
    expect(list.stdout).toContain('https://erp.example.com/hook  attempts=9  HTTP 500');
    expect((await ops(['deliveries:list', '--status', 'lost'])).status).toBe(2);
    expect((await ops(['deliveries:replay'])).status).toBe(2);

    const replay = await ops(['deliveries:replay', delivery!.id, '--json'], { TIMBRA_OPERATOR: 'ana' });
    expect(replay.status).toBe(0);
    const [result] = JSON.parse(replay.stdout) as { ok: boolean; replay: string }[];
    expect(await prisma.delivery.findUniqueOrThrow({ where: { id: result!.replay } })).toMatchObject({
      replayOf: delivery!.id,
      requestedBy: 'ops:ana',
      status: 'pending',
      eventId: delivery!.eventId,
    });
    // Replayed: no longer waiting for a person.
    expect((await ops(['deliveries:replay', '--all-dead', '--channel', 'webhook', '--json'])).stdout).not.toContain(
      delivery!.id,
    );
    // A disabled endpoint refuses the replay, exit 1 with the reason.
    await prisma.webhookEndpoint.update({ where: { id: endpoint.id }, data: { status: 'disabled' } });
    const refused = await ops(['deliveries:replay', delivery!.id]);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain('its endpoint is disabled');
  });
});

describe('globals:list', () => {
  it('lists the issued periods with their globals, and the tickets still open by period', async () => {
    const emisor = await prisma.emisor.upsert({
      where: { rfc: 'EKU9003173C9' },
      update: {},
      create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    });
    const sale = (externalId: string) =>
      prisma.payment.create({
        data: { provider: 'api:ops', externalId, amount: '116.00', currency: 'MXN', occurredAt: new Date() },
      });
    const ticket = async (code: string, day: string) =>
      prisma.ticket.create({
        data: {
          organizationId: emisor.id,
          paymentId: (await sale(`ops-ticket-${code}`)).id,
          code,
          total: '116.00',
          formaPago: '01',
          parts: [{ taxes: { iva: '0.160000' }, amount: '116.00' }],
          periodicidad: '01',
          periodStartsOn: new Date(`${day}T00:00:00Z`),
          occurredAt: new Date(`${day}T18:00:00Z`),
        },
      });
    await ticket('0PS0PEN001', '2026-11-29');
    await ticket('0PS0PEN002', '2026-11-29');
    await prisma.globalPeriod.create({
      data: {
        organizationId: emisor.id,
        periodicidad: '01',
        startsOn: new Date('2026-11-28T00:00:00Z'),
        endsOn: new Date('2026-11-28T00:00:00Z'),
        startsAt: new Date('2026-11-28T06:00:00Z'),
        endsAt: new Date('2026-11-29T06:00:00Z'),
        meses: '11',
        year: 2026,
        status: 'empty',
        tickets: 0,
        total: '0.00',
        parts: 0,
        issuedBy: 'schedule',
      },
    });
    const list = await ops(['globals:list']);
    expect(list.status).toBe(0);
    expect(list.stdout).toContain('2026-11-28..2026-11-28  empty   tickets=0  total=0.00  by schedule');
    expect(list.stdout).toContain('open: period 2026-11-29 (Periodicidad 01): 2 ticket(s)');
    const json = JSON.parse((await ops(['globals:list', '--json'])).stdout) as { open: { tickets: number }[] };
    expect(json.open).toEqual([{ periodicidad: '01', startsOn: '2026-11-29', tickets: 2 }]);
    expect((await ops(['globals:list', '--since', 'yesterday-ish'])).status).toBe(2);
  });
});

describe('history:prune', () => {
  it('counts on a dry run, then deletes what the retention rules let go, by the settings', async () => {
    const now = await databaseNow(prisma);
    const daysAgo = (d: number) => new Date(now - d * 86_400_000);
    await prisma.webhookEvent.createMany({
      data: [
        ...['evt_ops_old_1', 'evt_ops_old_2'].map((eventId) => ({
          provider: 'stripe',
          eventId,
          type: 'charge.succeeded',
          result: 'accepted',
          payload: {},
          receivedAt: daysAgo(40),
        })),
        {
          provider: 'stripe',
          eventId: 'evt_ops_new',
          type: 'charge.succeeded',
          result: 'accepted',
          payload: {},
          receivedAt: daysAgo(5),
        },
      ],
    });
    const dry = await ops(['history:prune', '--dry-run']);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toMatch(/webhook_events\s+would delete 2 \(kept 30 days\)/);
    expect(await prisma.webhookEvent.count({ where: { eventId: { startsWith: 'evt_ops_' } } })).toBe(3);

    // A setting of 0 keeps that table for ever; the others follow theirs.
    const kept = await ops(['history:prune'], { RETENTION_WEBHOOK_EVENTS_DAYS: '0' });
    expect(kept.stdout).toMatch(/webhook_events\s+kept for ever \(0 days\)/);
    expect(await prisma.webhookEvent.count({ where: { eventId: { startsWith: 'evt_ops_' } } })).toBe(3);

    const run = JSON.parse((await ops(['history:prune', '--json'], { RETENTION_WEBHOOK_EVENTS_DAYS: '7' })).stdout) as {
      deleted: Record<string, number>;
    };
    expect(run.deleted.webhook_events).toBe(2);
    expect(
      (await prisma.webhookEvent.findMany({ where: { eventId: { startsWith: 'evt_ops_' } } })).map((e) => e.eventId),
    ).toEqual(['evt_ops_new']);
    expect((await ops(['history:prune', '--dry-run', '--days', '3'])).status).toBe(2);
  });
});

describe('stamped-xml:compact', () => {
  /** A stamped invoice as a version before the TFD-only stamp left it: `stored` in stamped_xml. */
  async function stampedBefore(tag: string, uuid: string, stored: (copy: string) => string | null, keepTfd = true) {
    const { invoiceId, frozenXml } = await pendingInvoice(prisma, tag);
    const tfdXml = testTfd(parseStampedCfdi(insertTfd(frozenXml, testTfd('x'))).sello, uuid);
    const stampedXml = stored(insertTfd(frozenXml, tfdXml));
    await prisma.invoice.update({
      where: { id: invoiceId },
      data: { status: 'stamped', uuid, tfdXml: keepTfd ? tfdXml : null, stampedXml },
    });
    return { invoiceId, copy: insertTfd(frozenXml, tfdXml) };
  }
  const row = (id: string) => prisma.invoice.findUniqueOrThrow({ where: { id } });

  it('forgets each copy its frozen XML and TFD rebuild byte for byte, keeps and lists any other', async () => {
    const same = await stampedBefore('cx-same', '1A2B3C4D-0000-4000-8000-000000000001', (copy) => copy);
    const other = await stampedBefore('cx-other', '1A2B3C4D-0000-4000-8000-000000000002', (copy) => `${copy}\n`);
    const bare = await stampedBefore('cx-bare', '1A2B3C4D-0000-4000-8000-000000000003', (copy) => copy, false);
    const now = await stampedBefore('cx-now', '1A2B3C4D-0000-4000-8000-000000000004', () => null);
    const events = await prisma.event.count();
    type Run = { checked: number; forgotten?: number; wouldForget?: number; kept: { id: string; why: string }[] };

    const dry = await ops(['stamped-xml:compact', '--dry-run', '--json']);
    expect(dry.status).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, checked: 3, wouldForget: 1 });
    expect((await row(same.invoiceId)).stampedXml).toBe(same.copy);

    // One invoice a batch: every batch is read after the last, and says how far it got.
    const run = await ops(['stamped-xml:compact', '--batch', '1']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^3 invoices stored their stamped XML whole; forgot 1 /);
    expect(run.stdout).toContain(`(differs)`);
    expect(run.stdout).toContain(`${bare.invoiceId} (no TFD)`);
    expect(run.stderr).toMatch(/3 checked, 1 forgotten, 2 kept/);

    // What is read now is the same bytes as before; the others are untouched, and nothing was an event.
    const compacted = await row(same.invoiceId);
    expect(compacted.stampedXml).toBeNull();
    expect(stampedXmlOf(compacted)).toBe(same.copy);
    expect((await row(other.invoiceId)).stampedXml).toBe(`${other.copy}\n`);
    expect((await row(bare.invoiceId)).stampedXml).toBe(bare.copy);
    expect(stampedXmlOf(await row(now.invoiceId))).toBe(now.copy);
    expect(await prisma.event.count()).toBe(events);

    const again = JSON.parse((await ops(['stamped-xml:compact', '--json'])).stdout) as Run;
    expect(again).toMatchObject({ checked: 2, forgotten: 0 });
    expect(again.kept.map((k) => [k.id, k.why]).sort()).toEqual(
      [
        [other.invoiceId, 'differs'],
        [bare.invoiceId, 'no TFD'],
      ].sort(),
    );
    expect((await ops(['stamped-xml:compact', '--batch', '0'])).status).toBe(2);
  });

  it('keeps a copy whose row cannot rebuild it (no frozen XML, or one the TFD does not fit), rather than stop', () => {
    const copy = { frozenXml: '<cfdi:Comprobante>…</cfdi:Comprobante>', tfdXml: '<tfd/>', stampedXml: 'x' };
    expect(copyVerdict({ ...copy, frozenXml: null }, stampedXmlOf)).toBe('no TFD');
    expect(copyVerdict({ ...copy, frozenXml: 'not a CFDI' }, stampedXmlOf)).toBe('cannot rebuild');
    expect(copyVerdict(copy, stampedXmlOf)).toBe('differs');
    const rebuilt = stampedXmlOf({ frozenXml: copy.frozenXml, tfdXml: copy.tfdXml })!;
    expect(copyVerdict({ ...copy, stampedXml: rebuilt }, stampedXmlOf)).toBe('same');
  });
});

describe('csd:check', () => {
  it('says when the CSD expires and exits 1 within --days of its end; 2 without a certificate, 3 for one it cannot read', async () => {
    const cer = satTestCertificatePath('EKU9003173C9');
    const now = await ops(['csd:check', '--cer', cer, '--json']);
    const expiry = JSON.parse(now.stdout) as {
      noCertificado: string;
      daysLeft: number;
      expiring: boolean;
      validTo: string;
    };
    expect(expiry).toMatchObject({ noCertificado: '30001000000500003416', validTo: '2027-05-18T11:43:51.000Z' });
    // Against the clock it runs on: whatever today is, exit 1 exactly when within 30 days (or past).
    expect(now.status).toBe(expiry.daysLeft < 30 ? 1 : 0);
    const wide = await ops(['csd:check', '--cer', cer, '--days', '100000']);
    expect(wide.status).toBe(1);
    expect(wide.stdout).toMatch(
      /EKU9003173C9 CSD 30001000000500003416: valid until 2027-05-18T11:43:51\.000Z — .*(renew it now|EXPIRED)/,
    );
    expect((await ops(['csd:check'])).status).toBe(2);
    const junk = join(mkdtempSync(join(tmpdir(), 'timbra-csd-')), 'junk.cer');
    writeFileSync(junk, 'not a certificate');
    expect((await ops(['csd:check', '--cer', junk])).status).toBe(3);
    // A relative path is where the operator typed it (npm's INIT_CWD), not apps/worker where npm runs the CLI.
    const relative = await ops(['csd:check', '--cer', 'csd/EKU9003173C9.cer', '--days', '0'], { INIT_CWD: SAT_DIR });
    expect(relative.stdout).toMatch(/EKU9003173C9 CSD 30001000000500003416/);
  });
});
