import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { parseStampedCfdi, STAMP_WINDOW_MS, stampedXmlOf } from '@timbra/cfdi-core';
import { LOOPBACK_RANGES, newEndpointSecret } from '@timbra/db/deliveries';
import { type PrismaClient } from '@timbra/db';
import {
  backlogOf,
  correctionOrganizations,
  deliveryOrganizations,
  OrganizationClients,
  organizationIds,
  pendingOrganizations,
} from '@timbra/db/organizations';
import { OUTBOX_CHANNEL } from '@timbra/db/outbox';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { loadTestCsd, testCsdFiles } from '@timbra/test-support';
import { DEFAULT_RETENTION } from '@timbra/db/retention';
import { Dispatcher } from '../src/deliveries/dispatcher.ts';
import { pruneEveryOrganization } from '../src/operations/retention.ts';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import { runRelay } from '../src/stamping/relay.ts';
import { DeliveriesAcross } from '../src/organizations/deliveries-across.ts';
import {
  eventually,
  pendingInvoiceOf,
  redisFor,
  startSandboxProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

// Platform mode's worker: one process stamping for two organizations, each on its own client (row-
// level security holds it to its rows), each document sealed by its own emisor. The home
// organization's jobs name none; the other's name it (`org`), and its parts are built on first use.

const ORGS = {
  home: { id: randomUUID(), rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', cp: '42501' },
  other: { id: randomUUID(), rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', cp: '36257' },
} as const;
type Org = (typeof ORGS)[keyof typeof ORGS];

let db: TestDatabase;
let clients: OrganizationClients;
let sandbox: SandboxProcess;
const redis = redisFor();
/** The merchants' endpoints: one path an organization; what each received. */
let receiver: Server;
let receiverUrl: string;
const received: { path: string; body: { type: string; data: { object: { id: string } } } }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  for (const o of Object.values(ORGS))
    await owner.query(
      'INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, $3, $4, $5)',
      [o.id, o.rfc, o.nombre, o.regimenFiscal, o.cp],
    );
  await owner.end();
  clients = new OrganizationClients(db.url, { poolSize: 4 });
  sandbox = await startSandboxProcess();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as never });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  // Each organization's webhook endpoint, made through its own client.
  for (const [name, o] of Object.entries(ORGS))
    await clients.for(o.id).webhookEndpoint.create({
      data: { url: `${receiverUrl}/${name}`, events: ['*'], secret: newEndpointSecret() },
    });
});
afterAll(async () => {
  await new Promise((r) => receiver.close(r));
  await sandbox.stop();
  await clients.close();
  await redis.quit();
  await db.drop();
});

/** A pending Ingreso of `org`, frozen with its own CSD, written on its own client as the API writes it. */
const pendingOf = (org: Org) => pendingInvoiceOf(clients.for(org.id), org);

/** A worker (not running) for both organizations, the others' clients opened without a CSD. */
const platformWorker = (overrides: Parameters<typeof testWorker>[1] = {}) =>
  testWorker(
    { prisma: clients.for(ORGS.home.id), redis, sandbox },
    {
      organizations: {
        home: ORGS.home.id,
        open: (id) => Promise.resolve({ prisma: clients.for(id) }),
        ids: () => organizationIds(clients.unscoped),
        pending: () => pendingOrganizations(clients.unscoped),
      },
      // As main.ts: every organization's stamp writes and relay claims in shared statements.
      across: clients.across(),
      ...overrides,
    },
    { autorun: false },
  );

const statusesOf = async (prisma: PrismaClient) =>
  (await prisma.invoice.findMany({ select: { id: true, status: true } })).map((i) => `${i.id}:${i.status}`).sort();

describe('one worker for every organization', () => {
  it("relays and stamps each organization's rows on its own client, sealed by its own emisor", async () => {
    const home = [await pendingOf(ORGS.home), await pendingOf(ORGS.home)];
    const other = [await pendingOf(ORGS.other), await pendingOf(ORGS.other), await pendingOf(ORGS.other)];
    expect((await pendingOrganizations(clients.unscoped)).sort()).toEqual([ORGS.home.id, ORGS.other.id].sort());

    const opened: string[] = [];
    const w = testWorker(
      { prisma: clients.for(ORGS.home.id), redis, sandbox },
      {
        organizations: {
          home: ORGS.home.id,
          open: (id) => {
            opened.push(id);
            return Promise.resolve({
              prisma: clients.for(id),
              csd: loadTestCsd(ORGS.other.rfc),
              csdCredentials: testCsdFiles(ORGS.other.rfc),
            });
          },
          ids: () => organizationIds(clients.unscoped),
          pending: () => pendingOrganizations(clients.unscoped),
        },
        across: clients.across(),
      },
      { autorun: false },
    );
    try {
      expect(await w.relay.drainAll()).toBe(5);
      expect(await pendingOrganizations(clients.unscoped)).toEqual([]);
      // The other organization's jobs name it; the home organization's name none.
      const jobs = await w.queue.getJobs(['waiting']);
      // One claim for both organizations; each job names its own (the home one's too).
      const named = jobs.map((j) => (j.data as { org?: string }).org).sort();
      expect(named).toEqual([ORGS.home.id, ORGS.home.id, ORGS.other.id, ORGS.other.id, ORGS.other.id].sort());

      void w.worker.run();
      const stamped = async (org: Org, ids: string[]) =>
        (await statusesOf(clients.for(org.id))).filter((s) => s.endsWith(':stamped')).length === ids.length;
      await eventually(async () => (await stamped(ORGS.home, home)) && (await stamped(ORGS.other, other)), 20_000);
      expect(opened).toEqual([ORGS.other.id]);

      // Each organization sees its own invoices only, each stamped with its own emisor's RFC.
      for (const [org, ids] of [
        [ORGS.home, home],
        [ORGS.other, other],
      ] as const) {
        const invoices = await clients
          .for(org.id)
          .invoice.findMany({ select: { id: true, frozenXml: true, tfdXml: true, stampedXml: true } });
        expect(invoices.map((i) => i.id).sort()).toEqual([...ids].sort());
        for (const i of invoices) {
          expect(stampedXmlOf(i)).toContain(`<cfdi:Emisor Rfc="${org.rfc}"`);
          expect(parseStampedCfdi(stampedXmlOf(i)!).noCertificado).toBe(loadTestCsd(org.rfc).noCertificado);
        }
      }
      expect(await w.sweeper.sweepOnce()).toBe(0);
    } finally {
      await w.close();
    }
  });

  it("sends each organization's webhooks to its own endpoints, each on its own dispatcher", async () => {
    const due = await deliveryOrganizations(clients.unscoped);
    expect(due.sort()).toEqual([ORGS.home.id, ORGS.other.id].sort());
    const built: string[] = [];
    const across = new DeliveriesAcross({
      due: () => deliveryOrganizations(clients.unscoped),
      build: (id) => {
        built.push(id);
        return new Dispatcher({
          prisma: clients.for(id),
          logger: pino({ level: 'silent' }),
          webhook: {
            timeoutMs: 2_000,
            retry: { baseMs: 40, maxMs: 200, forMs: 60_000 },
            disable: { afterMs: 3_600_000, minFailures: 1000 },
            allowedAddresses: LOOPBACK_RANGES,
          },
          emailRetry: { baseMs: 40, maxMs: 200, forMs: 60_000 },
          concurrency: 4,
          leaseMs: 60_000,
        });
      },
      logger: pino({ level: 'silent' }),
    });
    await eventually(async () => {
      await across.drainAll();
      return (await deliveryOrganizations(clients.unscoped)).length === 0;
    }, 15_000);
    expect(built.sort()).toEqual([ORGS.home.id, ORGS.other.id].sort());
    // Every invoice.stamped event went to its own organization's endpoint, and only there.
    const stampedTo = (path: string) =>
      received.filter((r) => r.path === path && r.body.type === 'invoice.stamped').map((r) => r.body.data.object.id);
    const invoicesOf = async (org: Org) =>
      (await clients.for(org.id).invoice.findMany({ select: { id: true } })).map((i) => i.id).sort();
    expect(stampedTo('/home').sort()).toEqual(await invoicesOf(ORGS.home));
    expect(stampedTo('/other').sort()).toEqual(await invoicesOf(ORGS.other));
  });

  it("keeps one organization's backlog in Postgres beyond its share of the queue, not in front of another's row", async () => {
    for (let i = 0; i < 30; i++) await pendingOf(ORGS.home);
    await pendingOf(ORGS.other);
    const w = platformWorker({ relayShare: { maxEnqueued: 10, windowMs: 60_000 } });
    const owner = new pg.Client({ connectionString: db.url });
    await owner.connect();
    const pendingOfHome = () => clients.for(ORGS.home.id).outboxRow.count({ where: { status: 'pending' } });
    try {
      // The home organization's share (10) and the other's one row: 11 jobs, 20 rows left pending.
      expect(await w.relay.drainAll()).toBe(11);
      expect((await w.queue.getJobs(['waiting'])).length).toBe(11);
      expect(await pendingOfHome()).toBe(20);
      expect(w.relay.capped).toBe(true);
      // Nothing more while the share is full; as its jobs end, the relay takes as many more.
      expect(await w.relay.drainAll()).toBe(0);
      await owner.query(
        `UPDATE outbox SET status = 'done' WHERE id IN (SELECT id FROM outbox WHERE status = 'enqueued' AND organization_id = $1 LIMIT 4)`,
        [ORGS.home.id],
      );
      expect(await w.relay.drainAll()).toBe(4);
      // Rows enqueued longer than the window (their jobs lost with Redis, say) no longer hold the share.
      await owner.query(
        `UPDATE outbox SET enqueued_at = now() - interval '2 minutes' WHERE status = 'enqueued' AND organization_id = $1`,
        [ORGS.home.id],
      );
      expect(await w.relay.drainAll()).toBe(10);
      expect(await pendingOfHome()).toBe(6);
    } finally {
      await owner.end();
      await w.close();
    }
  });

  it("runs the background duties for every organization: retention on each one's rows, corrections where due", async () => {
    const w = platformWorker();
    try {
      // Each organization's provider events: one past the 30 days kept, one recent.
      const ago = (days: number) => new Date(Date.now() - days * 86_400_000);
      for (const o of Object.values(ORGS))
        await clients.for(o.id).webhookEvent.createMany({
          data: [45, 1].map((days) => ({
            provider: 'mercadopago',
            eventId: `retention-${days}`,
            type: 'payment',
            result: 'accepted',
            payload: {},
            receivedAt: ago(days),
          })),
        });
      const visited: string[] = [];
      const passes: Record<string, number>[] = [];
      const deleted = await pruneEveryOrganization({
        each: (what, duty) =>
          w.eachOrganization(what, (org) => {
            visited.push(org.organizationId);
            return duty(org);
          }),
        policy: DEFAULT_RETENTION,
        batchSize: 10,
        logger: pino({ level: 'silent' }),
        onPass: (d) => passes.push(d),
      });
      expect(visited.sort()).toEqual([ORGS.home.id, ORGS.other.id].sort());
      expect(deleted.webhook_events).toBe(2);
      expect(passes).toEqual([deleted]);
      for (const o of Object.values(ORGS))
        expect((await clients.for(o.id).webhookEvent.findMany()).map((e) => e.eventId)).toEqual(['retention-1']);

      // Which organizations the corrections' pass visits: those with a proof due and, with
      // AUTO_REFREEZE_LATE, those with a pending invoice made before the cutoff; no other.
      await pendingOf(ORGS.other);
      expect(await correctionOrganizations(clients.unscoped, undefined)).toEqual([]);
      expect(await correctionOrganizations(clients.unscoped, new Date(Date.now() - 3_600_000))).toEqual([]);
      // (the home organization's backlog of the test before is pending too)
      expect((await correctionOrganizations(clients.unscoped, new Date(Date.now() + 60_000))).sort()).toEqual(
        [ORGS.home.id, ORGS.other.id].sort(),
      );
    } finally {
      await w.close();
    }
  });

  it("shows every organization's backlog in the worker's gauges, a series each; each session reads its own", async () => {
    const before = await clients.for(ORGS.other.id).outboxRow.count({ where: { status: 'pending' } });
    await pendingOf(ORGS.other);
    const late = { windowMs: STAMP_WINDOW_MS, marginMs: 12 * 3_600_000 };
    // An organization's session reads its own figures; a session that names none, nothing.
    expect(await backlogOf(clients.for(ORGS.other.id), late)).toMatchObject({
      organization: ORGS.other.id,
      outbox: { pending: before + 1 },
    });
    expect(await backlogOf(clients.unscoped, late)).toBeUndefined();

    const metrics = createWorkerMetrics({
      prisma: clients.for(ORGS.home.id),
      everywhere: { db: clients.unscoped, home: ORGS.home.id },
      chain: new PacChain([], { threshold: 1, coolDownMs: 1 }),
    });
    const text = await metrics.registry.metrics();
    expect(text).toContain(`timbra_outbox_rows{organization="${ORGS.other.id}",status="pending"} ${before + 1}`);
    for (const o of Object.values(ORGS)) {
      expect(text).toMatch(new RegExp(`^timbra_dead_letters\\{organization="${o.id}"\\} 0$`, 'm'));
      expect(text).toMatch(
        new RegExp(`^timbra_deliveries_pending\\{organization="${o.id}",channel="email"\\} \\d+$`, 'm'),
      );
    }
    // Without `everywhere`: the home organization's series only.
    const own = await createWorkerMetrics({
      prisma: clients.for(ORGS.home.id),
      chain: new PacChain([], { threshold: 1, coolDownMs: 1 }),
    }).registry.metrics();
    expect(own).toContain(`timbra_dead_letters{organization="${ORGS.home.id}"} 0`);
    expect(own).not.toContain(ORGS.other.id);
  });

  it('wakes on the NOTIFY of a row, which names its organization, and drains that one without asking which have rows', async () => {
    let asked = 0;
    const w = platformWorker({
      organizations: {
        home: ORGS.home.id,
        open: (id) => Promise.resolve({ prisma: clients.for(id) }),
        ids: () => organizationIds(clients.unscoped),
        pending: () => {
          asked++;
          return pendingOrganizations(clients.unscoped);
        },
      },
    });
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (n) => payloads.push(n.payload ?? ''));
    await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
    // A poll far longer than the test: the first round looks at every organization (rows may have
    // committed before the LISTEN), then only a NOTIFY wakes it.
    const running = runRelay(w.relay, { databaseUrl: db.url, pollMs: 600_000, logger: pino({ level: 'silent' }) });
    try {
      await eventually(async () => asked === 1 && (await pendingOrganizations(clients.unscoped)).length === 0);
      const invoiceId = await pendingOf(ORGS.other);
      const status = async () =>
        (await clients.for(ORGS.other.id).outboxRow.findFirstOrThrow({ where: { invoiceId } })).status;
      await eventually(async () => (await status()) === 'enqueued', 10_000);
      expect(payloads).toEqual([ORGS.other.id]);
      expect(asked).toBe(1);
    } finally {
      await running.stop();
      await listener.end();
      await w.close();
    }
  });
});
