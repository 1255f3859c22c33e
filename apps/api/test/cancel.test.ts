import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { walkInvoiceTo } from '@timbra/db/testing';
import { jsonPoster, KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const auth = { authorization: `Bearer ${KEYS.pos}` };
const post = jsonPoster(() => api);

/** An Ingreso, stamped (as the worker would) unless `stamped` is false. */
async function invoice(stamped = true) {
  const res = await post('/v1/payments', {
    externalId: `C-${randomUUID()}`,
    amount: '1160.00',
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
  });
  const id = (res.body as { invoices: { id: string }[] }).invoices[0]!.id;
  const uuid = randomUUID().toUpperCase();
  if (stamped) await api.prisma.invoice.update({ where: { id }, data: { status: 'stamped', uuid } });
  return { id, uuid };
}

const cancel = (id: string, body: object, headers: Record<string, string> = {}) =>
  post(`/v1/invoices/${id}/cancel`, body, headers);

describe('POST /v1/invoices/:id/cancel', () => {
  it('writes the cancel request, its outbox row and cancel_requested in one go (202); a replay answers the same', async () => {
    const { id } = await invoice();
    const key = { 'idempotency-key': `cancel-${randomUUID()}` };
    const res = await cancel(id, { motivo: '02' }, key);
    expect(res.statusCode).toBe(202);
    expect(res.body).toMatchObject({ invoiceId: id, motivo: '02', folioSustitucion: null, status: 'requested' });
    const row = await api.prisma.invoice.findUniqueOrThrow({
      where: { id },
      include: { cancelRequests: { include: { outbox: true } } },
    });
    expect(row.status).toBe('cancel_requested');
    expect(row.cancelRequests).toHaveLength(1);
    expect(row.cancelRequests[0]!.outbox).toMatchObject({ kind: 'cancel', status: 'pending', invoiceId: id });

    const replay = await cancel(id, { motivo: '02' }, key);
    expect(replay.statusCode).toBe(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(res.body);
    // Without the key, a second request finds the invoice already being cancelled.
    const again = await cancel(id, { motivo: '02' });
    expect(again.statusCode).toBe(409);
    expect(again.body).toMatchObject({
      error: { code: 'not_cancellable', message: expect.stringContaining('cancel_requested') },
    });

    // The acuse: 404 until the PAC answered, then the XML as the PAC returned it.
    const requestId = (res.body as { id: string }).id;
    const acuse = () =>
      got.get(`${api.url}/v1/invoices/${id}/cancellations/${requestId}/acuse`, {
        headers: auth,
        throwHttpErrors: false,
      });
    expect((await acuse()).statusCode).toBe(404);
    await api.prisma.cancelRequest.update({ where: { id: requestId }, data: { acuse: '<Acuse>signed</Acuse>' } });
    expect(await acuse()).toMatchObject({ statusCode: 200, body: '<Acuse>signed</Acuse>' });
    expect(
      (
        await got.get(`${api.url}/v1/invoices/${randomUUID()}/cancellations/${requestId}/acuse`, {
          headers: auth,
          throwHttpErrors: false,
        })
      ).statusCode,
    ).toBe(404);

    const view = await got.get(`${api.url}/v1/invoices/${id}`, { headers: auth }).json<{ cancellations: unknown[] }>();
    expect(view.cancellations).toEqual([expect.objectContaining({ motivo: '02', status: 'requested' })]);
  });

  it('motivo 01 needs folioSustitucion, the UUID of another stamped invoice of ours', async () => {
    const { id } = await invoice();
    const missing = await cancel(id, { motivo: '01' });
    expect(missing.statusCode).toBe(422);
    expect(missing.body).toMatchObject({
      error: { code: 'validation_failed', details: [{ path: 'folioSustitucion' }] },
    });
    const unknown = await cancel(id, { motivo: '01', folioSustitucion: randomUUID() });
    expect(unknown.statusCode).toBe(422);
    const pending = await invoice(false);
    const { uuid: pendingUuid } = await api.prisma.invoice.update({
      where: { id: pending.id },
      data: { uuid: pending.uuid },
    });
    expect((await cancel(id, { motivo: '01', folioSustitucion: pendingUuid! })).statusCode).toBe(422);
    expect(await api.prisma.cancelRequest.count({ where: { invoiceId: id } })).toBe(0);

    const substitute = await invoice();
    const ok = await cancel(id, { motivo: '01', folioSustitucion: substitute.uuid.toLowerCase() });
    expect(ok.statusCode).toBe(202);
    expect(ok.body).toMatchObject({ motivo: '01', folioSustitucion: substitute.uuid });
  });

  it('refuses what cannot be cancelled, with stable codes', async () => {
    const pending = await invoice(false);
    const res = await cancel(pending.id, { motivo: '02' });
    expect(res.statusCode).toBe(409);
    expect(res.body).toMatchObject({ error: { code: 'not_cancellable', message: expect.stringContaining('pending') } });
    const { id } = await invoice();
    expect((await cancel(randomUUID(), { motivo: '02' })).statusCode).toBe(404);
    for (const body of [
      {},
      { motivo: '05' },
      { motivo: 2 },
      { motivo: '02', folioSustitucion: randomUUID() },
      { motivo: '02', x: 1 },
    ]) {
      const bad = await cancel(id, body);
      expect([JSON.stringify(body), bad.statusCode]).toEqual([JSON.stringify(body), 422]);
    }
    expect((await api.prisma.invoice.findUniqueOrThrow({ where: { id } })).status).toBe('stamped');
  });

  it('refuses to cancel an invoice that an Egreso still relates to (the SAT would too)', async () => {
    const { id } = await invoice();
    const { paymentId } = await api.prisma.invoice.findUniqueOrThrow({ where: { id } });
    const refund = await post(`/v1/payments/${paymentId}/refunds`, { amount: '116.00' });
    expect(refund.statusCode).toBe(201);
    const res = await cancel(id, { motivo: '02' });
    expect(res.statusCode).toBe(409);
    expect(res.body).toMatchObject({ error: { code: 'not_cancellable', message: expect.stringContaining('related') } });
    // Once the Egreso is cancelled, the invoice may be.
    const egresoId = (refund.body as { egreso: { id: string } }).egreso.id;
    await walkInvoiceTo(api.prisma, egresoId, 'cancelled');
    expect((await cancel(id, { motivo: '02' })).statusCode).toBe(202);
  });
});
