import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { parseStampedCfdi } from '@timbra/cfdi-core';
import { type PrismaClient } from '@timbra/db';
import { insertInvoices } from '@timbra/db/invoices';
import { OrganizationClients, organizationIds, pendingOrganizations } from '@timbra/db/organizations';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { freezeSample, loadTestCsd, testCsdFiles } from '@timbra/test-support';
import { eventually, redisFor, startSandboxProcess, testWorker, type SandboxProcess } from './helpers.ts';

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
});
afterAll(async () => {
  await sandbox.stop();
  await clients.close();
  await redis.quit();
  await db.drop();
});

let folio = 0;
/** A pending Ingreso of `org`, frozen with its own CSD, written on its own client as the API writes it. */
async function pendingOf(org: Org): Promise<string> {
  folio++;
  const frozen = freezeSample(
    {
      sourceId: `org-${folio}-${Date.now()}`,
      serie: 'W',
      folio: String(folio),
      lugarExpedicion: org.cp,
      emisor: { rfc: org.rfc, nombre: org.nombre, regimenFiscal: org.regimenFiscal },
    },
    loadTestCsd(org.rfc),
  );
  const prisma = clients.for(org.id);
  const [invoiceId] = await prisma.$transaction((tx) =>
    insertInvoices(tx, org.id, [
      {
        kind: 'I',
        serie: 'W',
        folio,
        paymentId: null,
        stampKey: frozen.stampKey,
        moneda: 'MXN',
        status: 'pending',
        frozen,
        totals: frozen,
      },
    ]),
  );
  return invoiceId!;
}

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
      },
      { autorun: false },
    );
    try {
      expect(await w.relay.drainAll()).toBe(5);
      expect(await pendingOrganizations(clients.unscoped)).toEqual([]);
      // The other organization's jobs name it; the home organization's name none.
      const jobs = await w.queue.getJobs(['waiting']);
      const named = jobs.map((j) => (j.data as { org?: string }).org ?? 'home').sort();
      expect(named).toEqual(['home', 'home', ORGS.other.id, ORGS.other.id, ORGS.other.id].sort());

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
        const invoices = await clients.for(org.id).invoice.findMany({ select: { id: true, stampedXml: true } });
        expect(invoices.map((i) => i.id).sort()).toEqual([...ids].sort());
        for (const i of invoices) {
          expect(i.stampedXml).toContain(`<cfdi:Emisor Rfc="${org.rfc}"`);
          expect(parseStampedCfdi(i.stampedXml!).noCertificado).toBe(loadTestCsd(org.rfc).noCertificado);
        }
      }
      expect(await w.sweeper.sweepOnce()).toBe(0);
    } finally {
      await w.close();
    }
  });
});
