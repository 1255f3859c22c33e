/** @clock corrections' next_attempt_at and leases are the database's clock */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { parseStampedCfdi, STAMP_WINDOW_MS, stampKeyFor } from '@timbra/cfdi-core';
import { freezeSample } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { backlogEverywhere } from '@timbra/db/organizations';
import { createTestDatabase, databaseNow, type TestDatabase } from '@timbra/db/testing';
import {
  eventually,
  redisFor,
  runOps,
  startApiProcess,
  startSandboxProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

// Corrections end to end: the API as its real process, a worker in this one, the PAC sandbox (whose
// taxpayer registry rejects a receptor whose name differs from the SAT's, as a real PAC does).
const API_KEY = 'corrections-key-0123456789';
const auth = { authorization: `Bearer ${API_KEY}` };
let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let apiUrl: string;
const redis = redisFor();

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY);
  apiUrl = api.url;
});
afterAll(async () => {
  await api.stop();
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

// The SAT's record of the test taxpayer CACX7605101P8 (the sandbox's registry).
const XOCHILT = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  codigoPostal: '36257',
  regimenFiscal: '612',
  usoCfdi: 'G03',
};

interface InvoiceView {
  id: string;
  status: string;
  serieFolio: string;
  uuid: string | null;
  version: number;
}
const invoice = (id: string) => got.get(`${apiUrl}/v1/invoices/${id}`, { headers: auth }).json<InvoiceView>();
const patch = (id: string, json: unknown) =>
  got.patch(`${apiUrl}/v1/invoices/${id}`, {
    json,
    headers: { ...auth, 'idempotency-key': randomUUID() },
    throwHttpErrors: false,
    responseType: 'json',
  });
const pay = async (externalId: string, receptor: typeof XOCHILT) =>
  (
    await got
      .post(`${apiUrl}/v1/payments`, {
        json: { externalId, amount: '1160.00', currency: 'MXN', occurredAt: new Date().toISOString(), receptor },
        headers: auth,
      })
      .json<{ id: string; invoices: { id: string }[] }>()
  ).invoices[0]!.id;
const ops = (args: string[]) => runOps(db.url, args);
const stampsUnder = async (stampKey: string) =>
  ((await sandbox.admin('ledger')) as { stamps: { customid?: string; uuid: string }[] }).stamps.filter(
    (s) => s.customid === stampKey,
  );

/** The late invoices (gauge timbra_invoices_late) of the one organization, as the owner's session reads them. */
const lateCount = async () => {
  const { id } = await prisma.emisor.findFirstOrThrow();
  const [own] = await backlogEverywhere(prisma, { windowMs: STAMP_WINDOW_MS, marginMs: 12 * 3600_000 }, id);
  return own!.late;
};

/** A payment recorded 73 hours ago whose invoice was never stamped (the PACs were down, say). */
async function lateInvoice(serie: string, folio: number) {
  const emisor = await prisma.emisor.findFirstOrThrow();
  const externalId = `COR-LATE-${serie}-${Date.now()}`;
  const payment = await prisma.payment.create({
    data: {
      provider: 'api:pos',
      externalId,
      amount: '1160.00',
      currency: 'MXN',
      occurredAt: new Date(Date.now() - 73 * 3600_000),
      receptor: XOCHILT,
      formaPago: '03',
    },
  });
  const late = freezeSample({
    sourceId: `api:pos:${externalId}`,
    issuedAt: new Date(Date.now() - 73 * 3600_000).toISOString(),
    serie,
    folio: String(folio),
  });
  expect(late.stampKey).toBe(stampKeyFor(emisor.rfc, 'I', `api:pos:${externalId}`));
  return prisma.invoice.create({
    data: {
      organizationId: emisor.id,
      paymentId: payment.id,
      kind: 'I',
      serie,
      folio,
      fecha: late.fecha,
      moneda: 'MXN',
      subTotal: late.subTotal,
      total: late.total,
      status: 'pending',
      stampKey: late.stampKey,
      frozenXml: late.xml,
      cadenaOriginal: late.cadenaOriginal,
      outbox: { create: { kind: 'stamp', stampKey: late.stampKey } },
    },
  });
}

describe('correcting an invoice that could not be stamped', () => {
  it('a PAC rejection of the receptor name → PATCH → proved unstamped, version 2 stamped under the same serie-folio', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 100 } });
    try {
      const id = await pay(`COR-NAME-${Date.now()}`, { ...XOCHILT, nombre: 'XOCHILT CASAS' });
      await w.relay.drainAll();
      await eventually(async () => (await invoice(id)).status === 'stamp_failed', 30_000);
      const before = await invoice(id);
      // A call a killed worker left in_flight an hour ago (past the proof's grace): settled by the proof.
      const killed = await prisma.pacAttempt.create({
        data: {
          invoiceId: id,
          pac: 'primary',
          outcome: 'in_flight',
          version: 1,
          durationMs: 0,
          createdAt: new Date((await databaseNow(prisma)) - 3600_000),
        },
      });

      const answer = await patch(id, { receptor: { nombre: XOCHILT.nombre }, reason: 'name as registered at the SAT' });
      // The PAC received version 1: it must say it never stamped it before version 2 is frozen.
      expect(answer.statusCode).toBe(202);
      expect(answer.body).toMatchObject({ status: 'proving', fromVersion: 1 });
      await eventually(async () => {
        await w.corrections!.runOnce();
        return (await invoice(id)).version === 2;
      });
      await w.relay.drainAll();
      await eventually(async () => (await invoice(id)).status === 'stamped', 30_000);
      const after = await invoice(id);
      expect(after.serieFolio).toBe(before.serieFolio);
      const xml = await got.get(`${apiUrl}/v1/invoices/${id}/xml`, { headers: auth }).text();
      expect(xml).toContain(`Nombre="${XOCHILT.nombre}"`);
      expect(parseStampedCfdi(xml).tfd.uuid).toBe(after.uuid);

      const versions = await got
        .get(`${apiUrl}/v1/invoices/${id}/versions`, { headers: auth })
        .json<{ versions: { version: number; stamped: boolean; supersededAt: string | null; proof: unknown }[] }>();
      expect(versions.versions.map((v) => [v.version, v.stamped])).toEqual([
        [1, false],
        [2, true],
      ]);
      expect(versions.versions[0]!.proof).toEqual([expect.objectContaining({ pac: 'primary', answer: 'not_stamped' })]);
      expect((await prisma.pacAttempt.findUniqueOrThrow({ where: { id: killed.id } })).outcome).toBe('interrupted');
      // One CFDI for the sale in the PAC's ledger.
      const row = await prisma.invoice.findUniqueOrThrow({ where: { id } });
      expect(await stampsUnder(row.stampKey)).toHaveLength(1);
      // The operator's view of the same.
      const shown = await ops(['invoice:versions', after.serieFolio, '--json']);
      expect(shown.status).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        version: 2,
        corrections: [expect.objectContaining({ status: 'applied', fromVersion: 1, toVersion: 2 })],
      });
      // The payment learned the customer's registered name (its refunds' Egresos use it).
      const payment = await prisma.payment.findUniqueOrThrow({ where: { id: row.paymentId! } });
      expect(payment.receptor).toMatchObject({ nombre: XOCHILT.nombre });
    } finally {
      await w.close();
    }
  });

  it('a version the PAC stamped but whose answer was lost → the correction is refused and that stamp recorded', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 100 } });
    try {
      // Every answer is dropped after the stamp is issued: the worker sees only ambiguous failures.
      await sandbox.admin('faults', { instance: 'primary', dropRate: 1, dropMode: 'destroy' });
      const id = await pay(`COR-DROP-${Date.now()}`, XOCHILT);
      await w.relay.drainAll();
      await eventually(async () => (await invoice(id)).status === 'stamp_failed', 30_000);
      await sandbox.admin('faults', { instance: 'primary', reset: true });
      const row = await prisma.invoice.findUniqueOrThrow({ where: { id } });
      const [issued] = await stampsUnder(row.stampKey);
      expect(issued).toBeDefined();

      const answer = await patch(id, { receptor: { usoCfdi: 'G01' } });
      expect(answer.statusCode).toBe(202);
      const correctionId = (answer.body as { id: string }).id;
      await eventually(async () => {
        await w.corrections!.runOnce();
        return (await prisma.invoiceCorrection.findUniqueOrThrow({ where: { id: correctionId } })).status !== 'proving';
      });
      expect(await prisma.invoiceCorrection.findUniqueOrThrow({ where: { id: correctionId } })).toMatchObject({
        status: 'refused',
        code: 'already_stamped',
      });
      expect(await invoice(id)).toMatchObject({ status: 'stamped', uuid: issued!.uuid, version: 1 });
      expect(await stampsUnder(row.stampKey)).toHaveLength(1);
    } finally {
      await w.close();
    }
  });

  it('while a PAC cannot answer, the correction waits (and says why); once it answers, the correction applies', async () => {
    const w = testWorker(
      { prisma, redis, sandbox },
      {
        retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 100 },
        corrections: { inFlightGraceMs: 0, retry: { baseMs: 10, maxMs: 20 } },
      },
    );
    try {
      const id = await pay(`COR-WAIT-${Date.now()}`, { ...XOCHILT, codigoPostal: '01000' });
      await w.relay.drainAll();
      await eventually(async () => (await invoice(id)).status === 'stamp_failed', 30_000);
      await sandbox.admin('faults', { instance: 'primary', errorRate: 1, errorStatus: 503 });
      const answer = await patch(id, { receptor: { codigoPostal: XOCHILT.codigoPostal } });
      const correctionId = (answer.body as { id: string }).id;
      await w.corrections!.runOnce();
      const waiting = await prisma.invoiceCorrection.findUniqueOrThrow({ where: { id: correctionId } });
      expect(waiting).toMatchObject({ status: 'proving', code: 'pac_unanswered' });
      expect((await invoice(id)).version).toBe(1);
      await sandbox.admin('faults', { instance: 'primary', reset: true });
      await eventually(async () => {
        await w.corrections!.runOnce();
        return (await prisma.invoiceCorrection.findUniqueOrThrow({ where: { id: correctionId } })).status === 'applied';
      });
      await w.relay.drainAll();
      await eventually(async () => (await invoice(id)).status === 'stamped', 30_000);
    } finally {
      await w.close();
    }
  });

  it('a Fecha past the 72-hour window (the PAC refuses it) → re-frozen with a fresh Fecha and stamped', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 100 } });
    try {
      const row = await lateInvoice('L', 1);
      // Counted late (metric timbra_invoices_late, alert TimbraInvoiceLate).
      expect(await lateCount()).toBeGreaterThanOrEqual(1);
      // Pending and past the window: correctable with nothing but a fresh Fecha — here from the ops CLI.
      const corrected = await ops([
        'invoice:correct',
        'L-1',
        '--api-url',
        apiUrl,
        '--api-key',
        API_KEY,
        '--reason',
        'Fecha left the stamping window',
        '--json',
      ]);
      expect(corrected.status).toBe(0);
      expect(JSON.parse(corrected.stdout)).toMatchObject({ status: 'proving' });
      await eventually(async () => {
        await w.corrections!.runOnce();
        return (await invoice(row.id)).version === 2;
      });
      await w.relay.drainAll();
      await eventually(async () => (await invoice(row.id)).status === 'stamped', 30_000);
      expect((await invoice(row.id)).serieFolio).toBe('L-1');
      expect(await lateCount()).toBe(0);
    } finally {
      await w.close();
    }
  });

  it('with AUTO_REFREEZE_LATE the worker re-freezes a late invoice itself: same data, a fresh Fecha, after the proof', async () => {
    const w = testWorker(
      { prisma, redis, sandbox },
      {
        corrections: {
          inFlightGraceMs: 0,
          retry: { baseMs: 10, maxMs: 20 },
          autoRefreezeLateMarginMs: 12 * 3600_000,
        },
      },
    );
    try {
      const row = await lateInvoice('M', 1);
      await eventually(async () => {
        await w.corrections!.runOnce();
        return (await invoice(row.id)).version === 2;
      });
      const [correction] = await prisma.invoiceCorrection.findMany({ where: { invoiceId: row.id } });
      expect(correction).toMatchObject({ status: 'applied', requestedBy: 'worker', toVersion: 2 });
      const v2 = await prisma.invoice.findUniqueOrThrow({ where: { id: row.id } });
      // The same document but for its Fecha (and so its Sello).
      const strip = (xml: string) => xml.replace(/ (Fecha|Sello)="[^"]*"/g, '');
      expect(strip(v2.frozenXml!)).toBe(strip(row.frozenXml!));
      expect(v2.fecha).not.toBe(row.fecha);
      await w.relay.drainAll();
      await eventually(async () => (await invoice(row.id)).status === 'stamped', 30_000);
    } finally {
      await w.close();
    }
  });
});

describe('replacing a stamped invoice', () => {
  const replace = (id: string, json: unknown) =>
    got.post(`${apiUrl}/v1/invoices/${id}/replace`, {
      json,
      headers: { ...auth, 'idempotency-key': randomUUID() },
      throwHttpErrors: false,
      responseType: 'json',
    });
  const stampedPayment = async (externalId: string, amount: string, w: ReturnType<typeof testWorker>) => {
    const id = (
      await got
        .post(`${apiUrl}/v1/payments`, {
          json: { externalId, amount, currency: 'MXN', occurredAt: new Date().toISOString(), receptor: XOCHILT },
          headers: auth,
        })
        .json<{ invoices: { id: string }[] }>()
    ).invoices[0]!.id;
    await w.relay.drainAll();
    await eventually(async () => (await invoice(id)).status === 'stamped', 30_000);
    return invoice(id);
  };

  it('the replacement (TipoRelacion 04) is stamped first, then the original is cancelled with motivo 01 pointing at it', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { cancelPoll: { baseMs: 50, maxMs: 200 } });
    try {
      const original = await stampedPayment(`REP-${Date.now()}`, '1160.00', w);
      const answer = await replace(original.id, { receptor: { usoCfdi: 'G01' }, reason: 'customer asked for G01' });
      expect(answer.statusCode).toBe(201);
      const replacement = answer.body as InvoiceView & { replacesInvoiceId: string };
      expect(replacement).toMatchObject({ status: 'pending', replacesInvoiceId: original.id });
      expect(replacement.serieFolio).not.toBe(original.serieFolio);
      // One replacement per invoice.
      expect((await replace(original.id, { reason: 'again' })).statusCode).toBe(409);

      await eventually(async () => {
        await w.relay.drainAll();
        return (await invoice(original.id)).status === 'cancelled';
      }, 30_000);
      const stamped = await invoice(replacement.id);
      expect(stamped.status).toBe('stamped');
      const xml = await got.get(`${apiUrl}/v1/invoices/${replacement.id}/xml`, { headers: auth }).text();
      expect(xml).toContain(`<cfdi:CfdiRelacionados TipoRelacion="04"><cfdi:CfdiRelacionado UUID="${original.uuid}"/>`);
      expect(xml).toContain('UsoCFDI="G01"');
      const [cancel] = await prisma.cancelRequest.findMany({ where: { invoiceId: original.id } });
      expect(cancel).toMatchObject({ motivo: '01', folioSustitucion: stamped.uuid, status: 'cancelled' });
    } finally {
      await w.close();
    }
  });

  it('the receptor rejects the cancellation: both stand, the API says so, and nothing asks again', async () => {
    await sandbox.admin('faults', { instance: 'primary', rejectCancellationBy: [XOCHILT.rfc] });
    const w = testWorker({ prisma, redis, sandbox }, { cancelPoll: { baseMs: 50, maxMs: 200 } });
    try {
      // Above the sandbox's acceptance threshold: the receptor decides.
      const original = await stampedPayment(`REP-REJ-${Date.now()}`, '9280.00', w);
      const answer = await replace(original.id, { receptor: { usoCfdi: 'G01' } });
      const replacementId = (answer.body as { id: string }).id;
      await eventually(async () => {
        await w.relay.drainAll();
        const requests = await prisma.cancelRequest.findMany({ where: { invoiceId: original.id } });
        return requests.length === 1 && requests[0]!.status === 'rejected';
      }, 30_000);
      const view = await got
        .get(`${apiUrl}/v1/invoices/${original.id}`, { headers: auth })
        .json<{ status: string; replacedByInvoiceId: string; cancellations: { status: string; motivo: string }[] }>();
      expect(view).toMatchObject({
        status: 'stamped',
        replacedByInvoiceId: replacementId,
        cancellations: [expect.objectContaining({ status: 'rejected', motivo: '01' })],
      });
      expect((await invoice(replacementId)).status).toBe('stamped');
      await w.sweeper.sweepOnce();
      expect(await prisma.cancelRequest.count({ where: { invoiceId: original.id } })).toBe(1);
    } finally {
      await sandbox.admin('faults', { instance: 'primary', reset: true });
      await w.close();
    }
  });
});
