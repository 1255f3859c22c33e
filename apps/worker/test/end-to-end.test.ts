import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { parseStampedCfdi, stampedXmlOf } from '@timbra/cfdi-core';
import { freezeSample } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import {
  ADMIN_TOKEN,
  eventually,
  redisFor,
  runOps as runOpsWith,
  startApiProcess,
  startSandboxProcess,
  swClients,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

const API_KEY = 'e2e-key-0123456789abcdef';
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
  // The API as the real process it is in production (apps never import each other).
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

const runOps = (args: string[]) => runOpsWith(db.url, args);
const ops = async (args: string[]) => {
  const run = await runOps(args);
  if (run.status !== 0) throw new Error(`ops ${args[0]} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
};

/** A frozen document our database will never hear about. */
function freshXml(): string {
  return freezeSample({ sourceId: `orphan-${Date.now()}` }).xml;
}

describe('end to end', () => {
  it('from POST /v1/payments to a stamped invoice the API serves; a dead letter re-driven with the ops command', async () => {
    const w = testWorker({ prisma, redis, sandbox });
    try {
      const auth = { authorization: `Bearer ${API_KEY}` };
      const payment = await got
        .post(`${apiUrl}/v1/payments`, {
          json: { externalId: 'E2E-1', amount: '1160.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: auth,
        })
        .json<{ invoices: { id: string }[] }>();
      const invoiceId = payment.invoices[0]!.id;
      await w.relay.drainAll();
      await eventually(
        async () =>
          (await got.get(`${apiUrl}/v1/invoices/${invoiceId}`, { headers: auth }).json<{ status: string }>()).status ===
          'stamped',
      );
      const xml = await got.get(`${apiUrl}/v1/invoices/${invoiceId}/xml`, { headers: auth });
      expect(xml.headers['x-timbra-xml']).toBe('stamped');
      const view = await got
        .get(`${apiUrl}/v1/invoices/${invoiceId}`, { headers: auth })
        .json<{ uuid: string; serieFolio: string }>();
      expect(parseStampedCfdi(xml.body).tfd.uuid).toBe(view.uuid);

      // A dead letter (the emisor is refused), fixed, then re-driven from the command line.
      await sandbox.admin('faults', { instance: 'primary', rejectRfcs: ['EKU9003173C9'] });
      const second = await got
        .post(`${apiUrl}/v1/payments`, {
          json: { externalId: 'E2E-2', amount: '580.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: auth,
        })
        .json<{ invoices: { id: string }[] }>();
      const failedId = second.invoices[0]!.id;
      await w.relay.drainAll();
      await eventually(
        async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: failedId } })).status === 'stamp_failed',
      );
      await sandbox.admin('faults', { instance: 'primary', reset: true });
      expect(JSON.parse(await ops(['dlq:list', '--json']))).toEqual([
        expect.objectContaining({ invoiceId: failedId, permanent: true }),
      ]);
      // A permanent refusal is not resent as it is (the same bytes, the same answer)...
      const refused = await runOps(['dlq:retry', '--all', '--json']);
      expect(refused.status).toBe(1);
      expect(JSON.parse(refused.stdout)).toEqual([
        expect.objectContaining({ ok: false, reason: 'permanent_rejection', invoiceId: failedId }),
      ]);
      // ...unless the operator says what the PAC checked has changed (here: the emisor is in the LCO now).
      expect(JSON.parse(await ops(['dlq:retry', '--all', '--force', '--json']))).toEqual([
        expect.objectContaining({ ok: true, invoiceId: failedId }),
      ]);
      await w.relay.drainAll();
      await eventually(
        async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: failedId } })).status === 'stamped',
      );

      // Reconciliation against the PAC's ledger: nothing orphaned, nothing duplicated...
      const stats = JSON.parse(await ops(['outbox:stats', '--json'])) as { byStatus: Record<string, number> };
      expect(stats.byStatus).toEqual({ done: 2 });
      expect(await ops(['invoice:show', view.serieFolio])).toContain(view.uuid);
      const ledgerArgs = ['reconcile', '--ledger-url', sandbox.adminUrl, '--admin-token', ADMIN_TOKEN, '--json'];
      expect(JSON.parse(await ops(ledgerArgs))).toMatchObject({ orphans: [], duplicates: [] });
      // ...until a timbre is issued that our database never learns of (the dual-write bug): exit 1.
      const orphan = await swClients(sandbox)[0]!.stamp(freshXml(), { idempotencyKey: 'orphan-key' });
      const failure = await runOps(ledgerArgs);
      expect(failure.status).toBe(1);
      expect(JSON.parse(failure.stdout)).toMatchObject({ orphans: [expect.objectContaining({ uuid: orphan.uuid })] });
    } finally {
      await w.close();
    }
  });

  it('refunds against the sandbox: one before the Ingreso is stamped, one after — each Egreso stamped once, related to the Ingreso', async () => {
    const w = testWorker({ prisma, redis, sandbox });
    const auth = { authorization: `Bearer ${API_KEY}` };
    const invoiceOf = (id: string) =>
      got.get(`${apiUrl}/v1/invoices/${id}`, { headers: auth }).json<{ status: string; uuid: string | null }>();
    try {
      const payment = await got
        .post(`${apiUrl}/v1/payments`, {
          json: { externalId: 'E2E-RF', amount: '1160.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: auth,
        })
        .json<{ id: string; invoices: { id: string }[] }>();
      const ingresoId = payment.invoices[0]!.id;
      const refund = (amount: string) =>
        got
          .post(`${apiUrl}/v1/payments/${payment.id}/refunds`, {
            json: { amount },
            headers: { ...auth, 'idempotency-key': randomUUID() },
          })
          .json<{ egreso: { id: string; status: string } }>();
      // Before: nothing has stamped the Ingreso yet (the relay has not run).
      const before = await refund('116.00');
      expect(before.egreso.status).toBe('waiting');
      await w.relay.drainAll();
      await eventually(async () => (await invoiceOf(ingresoId)).status === 'stamped');
      const after = await refund('232.00');
      expect(after.egreso.status).toBe('pending');
      // The waiting one is frozen by the worker when the Ingreso is stamped; the relay publishes both.
      await eventually(async () => {
        await w.relay.drainAll();
        const states = await Promise.all([before, after].map((r) => invoiceOf(r.egreso.id)));
        return states.every((e) => e.status === 'stamped');
      }, 30_000);

      const ingreso = await invoiceOf(ingresoId);
      for (const r of [before, after]) {
        const xml = await got.get(`${apiUrl}/v1/invoices/${r.egreso.id}/xml`, { headers: auth }).text();
        const stamped = parseStampedCfdi(xml);
        expect(stamped.tfd.uuid).toBe((await invoiceOf(r.egreso.id)).uuid);
        expect(xml).toContain('TipoDeComprobante="E"');
        expect(xml).toContain(`<cfdi:CfdiRelacionado UUID="${ingreso.uuid}"/>`);
      }
      const egresoKeys = await prisma.invoice.findMany({ where: { paymentId: payment.id, kind: 'E' } });
      const stamps = (
        (await sandbox.admin('ledger', undefined)) as { stamps: { customid?: string; uuid: string }[] }
      ).stamps.filter((s) => egresoKeys.some((e) => e.stampKey === s.customid));
      expect(stamps.map((s) => s.uuid).sort()).toEqual(egresoKeys.map((e) => e.uuid).sort());
    } finally {
      await w.close();
    }
  });

  it('a sale in three installments against the sandbox: the Ingreso (PPD) and three Pagos stamped once each, parcialidades 1..3', async () => {
    const w = testWorker({ prisma, redis, sandbox });
    const auth = { authorization: `Bearer ${API_KEY}` };
    const status = async (id: string) =>
      (await got.get(`${apiUrl}/v1/invoices/${id}`, { headers: auth }).json<{ status: string }>()).status;
    try {
      const sale = await got
        .post(`${apiUrl}/v1/payments`, {
          json: {
            externalId: 'E2E-PPD',
            amount: '3480.00',
            currency: 'MXN',
            occurredAt: new Date().toISOString(),
            paymentTerms: 'installments',
            receptor: {
              rfc: 'CACX7605101P8',
              nombre: 'XOCHILT CASAS CHAVEZ',
              regimenFiscal: '612',
              codigoPostal: '36257',
              usoCfdi: 'G03',
            },
          },
          headers: auth,
        })
        .json<{ invoices: { id: string }[] }>();
      const ingresoId = sale.invoices[0]!.id;
      const pay = (amount: string) =>
        got
          .post(`${apiUrl}/v1/invoices/${ingresoId}/payments`, {
            json: { amount, paidAt: new Date().toISOString(), formaPago: '03' },
            headers: { ...auth, 'idempotency-key': randomUUID() },
          })
          .json<{ numParcialidad: number; pago: { id: string } }>();
      const first = await pay('1160.00'); // before the Ingreso is stamped: waits
      await w.relay.drainAll();
      await eventually(async () => (await status(ingresoId)) === 'stamped');
      const rest = [await pay('1160.00'), await pay('1160.00')];
      const pagos = [first, ...rest];
      expect(pagos.map((p) => p.numParcialidad)).toEqual([1, 2, 3]);
      await eventually(async () => {
        await w.relay.drainAll();
        return (await Promise.all(pagos.map((p) => status(p.pago.id)))).every((s) => s === 'stamped');
      }, 30_000);

      const ingreso = await prisma.invoice.findUniqueOrThrow({ where: { id: ingresoId } });
      expect(stampedXmlOf(ingreso)).toContain('MetodoPago="PPD"');
      for (const [i, p] of pagos.entries()) {
        const xml = await got.get(`${apiUrl}/v1/invoices/${p.pago.id}/xml`, { headers: auth }).text();
        expect(parseStampedCfdi(xml).tfd.uuid).toBeTruthy();
        expect(xml).toContain(`IdDocumento="${ingreso.uuid}"`);
        expect(xml).toContain(`NumParcialidad="${i + 1}"`);
        expect(xml).toContain(`ImpSaldoInsoluto="${(3480 - 1160 * (i + 1)).toFixed(2)}"`);
      }
      const keys = (await prisma.invoice.findMany({ where: { id: { in: pagos.map((p) => p.pago.id) } } })).map(
        (p) => p.stampKey,
      );
      const { stamps } = (await sandbox.admin('ledger', undefined)) as { stamps: { customid?: string }[] };
      expect(keys.map((k) => stamps.filter((s) => s.customid === k).length)).toEqual([1, 1, 1]);
    } finally {
      await w.close();
    }
  });

  it('a mistake replaced and cancelled through the API: motivo 01 pointing at the new invoice, cancelled at the SAT', async () => {
    const w = testWorker({ prisma, redis, sandbox });
    const auth = { authorization: `Bearer ${API_KEY}` };
    const view = (id: string) =>
      got
        .get(`${apiUrl}/v1/invoices/${id}`, { headers: auth })
        .json<{ status: string; uuid: string | null; cancellations: { status: string; uuidCode: string | null }[] }>();
    const sale = async (externalId: string) =>
      (
        await got
          .post(`${apiUrl}/v1/payments`, {
            json: { externalId, amount: '580.00', currency: 'MXN', occurredAt: new Date().toISOString() },
            headers: auth,
          })
          .json<{ invoices: { id: string }[] }>()
      ).invoices[0]!.id;
    try {
      const wrong = await sale('E2E-WRONG');
      const right = await sale('E2E-RIGHT');
      await w.relay.drainAll();
      await eventually(
        async () => (await view(wrong)).status === 'stamped' && (await view(right)).status === 'stamped',
      );
      const substitute = (await view(right)).uuid!;
      const requested = await got.post(`${apiUrl}/v1/invoices/${wrong}/cancel`, {
        json: { motivo: '01', folioSustitucion: substitute },
        headers: { ...auth, 'idempotency-key': 'e2e-cancel-1' },
      });
      expect(requested.statusCode).toBe(202);
      await eventually(async () => {
        await w.relay.drainAll();
        return (await view(wrong)).status === 'cancelled';
      }, 20_000);
      expect((await view(wrong)).cancellations).toEqual([
        expect.objectContaining({ status: 'cancelled', uuidCode: '201' }),
      ]);
      const { stamps } = (await sandbox.admin('ledger', undefined)) as {
        stamps: { uuid: string; cancellation?: { motivo: string; folioSustitucion?: string } }[];
      };
      const wrongUuid = (await view(wrong)).uuid;
      expect(stamps.find((s) => s.uuid === wrongUuid)?.cancellation).toMatchObject({
        motivo: '01',
        folioSustitucion: substitute,
      });
      expect((await view(right)).status).toBe('stamped');
    } finally {
      await w.close();
    }
  });

  it('ops webhooks:failed lists the poison events with their reasons; a bad --since is a usage error', async () => {
    await prisma.webhookEvent.createMany({
      data: [
        { provider: 'stripe', eventId: 'evt_ok', type: 't', result: 'accepted', payload: {} },
        {
          provider: 'stripe',
          eventId: 'evt_poison',
          type: 'payment_intent.succeeded',
          result: 'failed',
          reason: 'invalid_amount: must be greater than 0',
          payload: {},
        },
      ],
    });
    expect(JSON.parse(await ops(['webhooks:failed', '--json']))).toEqual([
      expect.objectContaining({ eventId: 'evt_poison', reason: 'invalid_amount: must be greater than 0' }),
    ]);
    expect(await ops(['webhooks:failed'])).toMatch(/evt_poison {2}payment_intent.succeeded {2}invalid_amount/);
    expect(JSON.parse(await ops(['webhooks:failed', '--since', '2999-01-01T00:00:00Z', '--json']))).toEqual([]);
    expect((await runOps(['webhooks:failed', '--since', 'yesterday'])).status).toBe(2);
  });

  it('reconcile --fix repairs a duplicate: the other UUID cancelled (motivo 01, replaced by ours), ours kept', async () => {
    const w = testWorker({ prisma, redis, sandbox });
    const auth = { authorization: `Bearer ${API_KEY}` };
    try {
      const payment = await got
        .post(`${apiUrl}/v1/payments`, {
          json: { externalId: 'E2E-DUP', amount: '232.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: auth,
        })
        .json<{ invoices: { id: string }[] }>();
      const invoiceId = payment.invoices[0]!.id;
      await w.relay.drainAll();
      await eventually(
        async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } })).status === 'stamped',
      );
      const invoice = await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
      // What the naive failover does: the same document stamped again at the other PAC.
      const duplicate = await swClients(sandbox)[1]!.stamp(invoice.frozenXml!, { idempotencyKey: invoice.stampKey });
      expect(duplicate.uuid).not.toBe(invoice.uuid);

      const ledgerArgs = ['reconcile', '--ledger-url', sandbox.adminUrl, '--admin-token', ADMIN_TOKEN, '--json'];
      const proposed = await runOps([...ledgerArgs, '--fix']);
      expect(proposed.status).toBe(1);
      expect(JSON.parse(proposed.stdout)).toMatchObject({
        fixes: [{ keep: invoice.uuid, invoiceId, cancel: [duplicate.uuid.toUpperCase()] }],
        executed: [],
      });
      expect(await prisma.cancelRequest.count({ where: { invoiceId } })).toBe(0);

      const executed = JSON.parse((await runOps([...ledgerArgs, '--fix', '--execute'])).stdout) as {
        executed: { ok: boolean; created: boolean }[];
      };
      expect(executed.executed).toEqual([expect.objectContaining({ ok: true, created: true })]);
      await eventually(async () => {
        await w.relay.drainAll();
        return (await prisma.cancelRequest.findFirstOrThrow({ where: { invoiceId } })).status === 'cancelled';
      }, 20_000);
      const { stamps } = (await sandbox.admin('ledger', undefined)) as {
        stamps: { uuid: string; cancellation?: { motivo: string; folioSustitucion?: string } }[];
      };
      expect(stamps.find((s) => s.uuid === duplicate.uuid)?.cancellation).toMatchObject({
        motivo: '01',
        folioSustitucion: invoice.uuid,
      });
      expect(stamps.find((s) => s.uuid === invoice.uuid)?.cancellation).toBeUndefined();
      expect((await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } })).status).toBe('stamped');
      // Again: nothing new is queued.
      const again = JSON.parse((await runOps([...ledgerArgs, '--fix', '--execute'])).stdout) as {
        executed: { created: boolean }[];
      };
      expect(again.executed).toEqual([expect.objectContaining({ created: false })]);
    } finally {
      await w.close();
    }
  });
});
