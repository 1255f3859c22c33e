import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const retry = (id: string, key = KEYS.admin, body: object = {}) =>
  got.post(`${api.url}/v1/outbox/${id}/retry`, {
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    throwHttpErrors: false,
  });

describe('POST /v1/outbox/:id/retry (re-drive a dead letter)', () => {
  it('puts a failed row and its invoice back to pending, keeping the frozen bytes; admin keys only', async () => {
    const created = await got
      .post(`${api.url}/v1/payments`, {
        json: { externalId: 'R-1', amount: '10.00', currency: 'MXN', occurredAt: new Date().toISOString() },
        headers: { authorization: `Bearer ${KEYS.pos}` },
      })
      .json<{ invoices: { id: string }[] }>();
    const invoiceId = created.invoices[0]!.id;
    const row = await api.prisma.outboxRow.findFirstOrThrow({ where: { invoiceId } });
    const frozen = (await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } })).frozenXml;

    expect((await retry(row.id)).statusCode).toBe(409); // still pending: nothing to re-drive
    await api.prisma.outboxRow.update({ where: { id: row.id }, data: { status: 'failed', lastError: '402: LCO' } });
    await api.prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamp_failed' } });

    const forbidden = await retry(row.id, KEYS.pos);
    expect(forbidden.statusCode).toBe(403);
    expect(JSON.parse(forbidden.body)).toMatchObject({ error: { code: 'forbidden' } });

    expect((await retry(row.id, KEYS.admin, { reason: '' })).statusCode).toBe(422);
    expect((await retry(row.id, KEYS.admin, { why: 'x' })).statusCode).toBe(422);
    const res = await retry(row.id, KEYS.admin, { reason: 'LCO refreshed' });
    expect(res.statusCode).toBe(202);
    expect(await api.prisma.outboxRow.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
      status: 'pending',
      lastError: null,
    });
    const invoice = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    expect(invoice.status).toBe('pending');
    expect(invoice.frozenXml).toBe(frozen);
    expect((await retry('00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    // The re-drive is on record in the invoice's history: who (the key), why, and what failed.
    const view = await got
      .get(`${api.url}/v1/invoices/${invoiceId}`, { headers: { authorization: `Bearer ${KEYS.pos}` } })
      .json<{ history: { redrives: unknown[] } }>();
    expect(view.history.redrives).toEqual([
      { outboxId: row.id, by: 'api:ops', reason: 'LCO refreshed', lastError: '402: LCO', at: expect.any(String) },
    ]);
    // The audit trail cannot be rewritten.
    await expect(api.prisma.outboxRedrive.deleteMany({ where: { outboxId: row.id } })).rejects.toThrow(/append-only/);
    await expect(
      api.prisma.outboxRedrive.updateMany({ where: { outboxId: row.id }, data: { by: 'someone else' } }),
    ).rejects.toThrow(/append-only/);
  });

  it('a dead letter a PAC refused for good is not resent as it is: 409 permanent_rejection says to correct it; force resends', async () => {
    const created = await got
      .post(`${api.url}/v1/payments`, {
        json: { externalId: 'R-perm', amount: '10.00', currency: 'MXN', occurredAt: new Date().toISOString() },
        headers: { authorization: `Bearer ${KEYS.pos}` },
      })
      .json<{ invoices: { id: string }[] }>();
    const invoiceId = created.invoices[0]!.id;
    const row = await api.prisma.outboxRow.findFirstOrThrow({ where: { invoiceId } });
    // What the worker records when the PAC answers a permanent rejection (a SAT rule), then dead-letters.
    await api.prisma.pacAttempt.create({
      data: { invoiceId, pac: 'primary', outcome: 'permanent', code: 'CFDI40147', durationMs: 5 },
    });
    await api.prisma.outboxRow.update({
      where: { id: row.id },
      data: { status: 'failed', lastError: 'CFDI40147: CP' },
    });
    await api.prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamp_failed' } });

    const refused = await retry(row.id, KEYS.admin, { reason: 'try again' });
    expect(refused.statusCode).toBe(409);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: { code: 'permanent_rejection', details: { invoiceId, lastError: 'CFDI40147: CP' } },
    });
    expect((await api.prisma.outboxRow.findUniqueOrThrow({ where: { id: row.id } })).status).toBe('failed');
    expect(await api.prisma.outboxRedrive.count({ where: { outboxId: row.id } })).toBe(0);

    const forced = await retry(row.id, KEYS.admin, { reason: 'taxpayer registered since', force: true });
    expect(forced.statusCode).toBe(202);
    expect((await api.prisma.outboxRow.findUniqueOrThrow({ where: { id: row.id } })).status).toBe('pending');
  });
});
