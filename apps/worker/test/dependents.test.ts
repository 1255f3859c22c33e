/** @clock the sweeper's waiting dependents, by the database's clock */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import {
  formatFecha,
  parseStampedCfdi,
  stampedXmlOf,
  stampKeyFor,
  timeZoneForCodigoPostal,
  type InvoiceRequestInput,
} from '@timbra/cfdi-core';
import { TEST_EMISOR, TEST_RECEPTOR, loadTestCsd } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { lockInvoiceShared } from '@timbra/db/invoices';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import type { DeadLetterData } from '../src/stamping/jobs.ts';
import { freezeOverdueDependents } from '../src/invoices/freeze-dependents.ts';
import {
  eventually,
  pendingInvoice,
  redisFor,
  startSandboxProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

const csd = loadTestCsd('EKU9003173C9');

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
const redis = redisFor();

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

let folio = 0;

/** A refund's Egreso waiting for `originalId` (what the lifecycle flow will write). */
async function waitingEgreso(
  originalId: string,
  sourceId: string,
  db: Pick<PrismaClient, 'invoice' | 'emisor'> = prisma,
) {
  folio++;
  const request: InvoiceRequestInput = {
    tipoDeComprobante: 'E',
    sourceId,
    issuedAt: new Date(Date.now() - 30_000).toISOString(),
    serie: 'NC',
    folio: String(folio),
    lugarExpedicion: '42501',
    formaPago: '04',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR, usoCFDI: 'G02' },
    conceptos: [
      {
        claveProdServ: '84111506',
        cantidad: '1',
        claveUnidad: 'ACT',
        descripcion: 'Devolución',
        valorUnitario: '50.00',
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  };
  const emisor = await db.emisor.findFirstOrThrow();
  return db.invoice.create({
    data: {
      organizationId: emisor.id,
      kind: 'E',
      serie: 'NC',
      folio,
      moneda: 'MXN',
      subTotal: '50.00',
      total: '58.00',
      status: 'waiting',
      stampKey: stampKeyFor('EKU9003173C9', 'E', sourceId),
      relatedInvoiceId: originalId,
      request,
    },
  });
}

function worker(letters?: DeadLetterData[]) {
  return testWorker(
    { prisma, redis, sandbox },
    letters ? { alert: (letter: DeadLetterData) => void letters.push(letter) } : {},
  );
}

describe('dependent documents', () => {
  it('an Egreso waits for its Ingreso, is frozen once it is stamped (related to its UUID), then stamped', async () => {
    const original = await pendingInvoice(prisma, 'original');
    const egreso = await waitingEgreso(original.invoiceId, `re_${randomBytes(4).toString('hex')}`);
    const w = worker();
    try {
      // Nothing to publish for the Egreso while its original is not stamped.
      expect(await w.relay.drainAll()).toBe(1);
      expect(await prisma.outboxRow.count({ where: { invoiceId: egreso.id } })).toBe(0);
      await eventually(
        async () =>
          (await prisma.invoice.findUniqueOrThrow({ where: { id: original.invoiceId } })).status === 'stamped',
      );
      await eventually(async () => (await prisma.outboxRow.count({ where: { invoiceId: egreso.id } })) === 1);
      await w.relay.drainAll();
      await eventually(
        async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: egreso.id } })).status === 'stamped',
      );
      const [o, e] = await Promise.all([
        prisma.invoice.findUniqueOrThrow({ where: { id: original.invoiceId } }),
        prisma.invoice.findUniqueOrThrow({ where: { id: egreso.id } }),
      ]);
      expect(e.frozenXml).toContain(
        `<cfdi:CfdiRelacionados TipoRelacion="01"><cfdi:CfdiRelacionado UUID="${o.uuid}"/>`,
      );
      expect(e.frozenXml).toContain('TipoDeComprobante="E"');
      // Fecha is the issue time the API stored with the request, not the worker's now() (invariant 4).
      const { issuedAt } = e.request as { issuedAt: string };
      expect(e.frozenXml).toContain(`Fecha="${formatFecha(new Date(issuedAt), timeZoneForCodigoPostal('42501'))}"`);
      expect(parseStampedCfdi(stampedXmlOf(e)!).tfd.uuid).toBe(e.uuid);
    } finally {
      await w.close();
    }
  });

  it('an Egreso written while its Ingreso is being stamped is frozen at once, not left for the sweeper', async () => {
    const original = await pendingInvoice(prisma, 'race');
    const sourceId = `re_${randomBytes(4).toString('hex')}`;
    const w = worker();
    try {
      // The refund's transaction, as the API writes a dependent: the Ingreso read under a share lock
      // (still pending), then — while the worker's stamp of it waits on that lock — the Egreso
      // written waiting, committed after the stamp's statement began.
      await prisma.$transaction(
        async (tx) => {
          expect((await lockInvoiceShared(tx, original.invoiceId))?.status).toBe('pending');
          await w.relay.drainAll();
          // The stamp's UPDATE is waiting for this transaction's lock.
          await eventually(async () => {
            const [row] = await prisma.$queryRaw<{ n: number }[]>`
              SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE invoices i SET uuid%'`;
            return row!.n > 0;
          }, 15_000);
          const egreso = await waitingEgreso(original.invoiceId, sourceId, tx);
          expect(egreso.status).toBe('waiting');
        },
        { timeout: 30_000 },
      );
      const egreso = await prisma.invoice.findFirstOrThrow({
        where: { stampKey: stampKeyFor('EKU9003173C9', 'E', sourceId) },
      });
      // Frozen by the worker right after the stamp — no sweeper runs in this test.
      await eventually(async () => (await prisma.outboxRow.count({ where: { invoiceId: egreso.id } })) === 1, 10_000);
      expect((await prisma.invoice.findUniqueOrThrow({ where: { id: egreso.id } })).status).not.toBe('waiting');
    } finally {
      await w.close();
    }
  });

  it('the sweeper freezes a dependent left waiting after its original was stamped; freezing twice is a no-op', async () => {
    const original = await pendingInvoice(prisma, 'stamped-before');
    await prisma.invoice.update({
      where: { id: original.invoiceId },
      data: { status: 'stamped', uuid: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE' },
    });
    const egreso = await waitingEgreso(original.invoiceId, `re_${randomBytes(4).toString('hex')}`);
    expect(await freezeOverdueDependents(prisma, csd)).toBe(1);
    expect(await freezeOverdueDependents(prisma, csd)).toBe(0);
    const frozen = await prisma.invoice.findUniqueOrThrow({ where: { id: egreso.id }, include: { outbox: true } });
    expect(frozen.status).toBe('pending');
    expect(frozen.outbox).toHaveLength(1);
    expect(frozen.frozenXml).toContain('UUID="AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE"');
  });

  it('a dead-lettered Ingreso takes its waiting Egreso with it: the letter says how many documents are blocked', async () => {
    await sandbox.admin('faults', { instance: 'primary', rejectRfcs: ['EKU9003173C9'] });
    const letters: DeadLetterData[] = [];
    const w = worker(letters);
    try {
      const original = await pendingInvoice(prisma, 'rejected');
      const egreso = await waitingEgreso(original.invoiceId, `re_${randomBytes(4).toString('hex')}`);
      await w.relay.drainAll();
      // (Rows left pending by the tests above are refused as well: the letter of this one is looked for.)
      const mine = () => letters.filter((l) => l.invoiceId === original.invoiceId);
      await eventually(() => Promise.resolve(mine().length === 1));
      expect(mine()[0]).toMatchObject({ code: '402', waitingDependents: 1 });
      expect((await prisma.invoice.findUniqueOrThrow({ where: { id: egreso.id } })).status).toBe('waiting');
    } finally {
      await w.close();
      await sandbox.admin('faults', { instance: 'primary', reset: true });
    }
  });
});
