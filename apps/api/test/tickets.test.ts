/** @clock global periods close on the emisor's local calendar */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { globalPeriodOf, parseXml } from '@timbra/cfdi-core';
import { loadTestCsd, SchemaValidator } from '@timbra/test-support';
import { globalLag, issueDueGlobals, issueGlobal } from '@timbra/globals';
import { globalIssuer } from '../src/tickets/record-tickets.ts';
import { selfInvoice } from '../src/tickets/self-invoice.ts';
import { recordRefund } from '../src/refunds-installments/record-refund.ts';
import { DomainError } from '../src/domain-errors.ts';
import { jsonPoster, KEYS, stampAsWorker, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ global: { maxConceptosPerGlobal: 3 } });
});
afterAll(() => api.close());

const post = jsonPoster(() => api);
const admin = jsonPoster(() => api, KEYS.admin);
const get = <T>(path: string) =>
  got.get(`${api.url}${path}`, { headers: { authorization: `Bearer ${KEYS.pos}` } }).json<T>();
const ZONE = 'America/Mexico_City'; // the test emisor's CP 42501 (Hidalgo)
const CUSTOMER = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  codigoPostal: '36257',
  usoCfdi: 'G03',
};

interface Sale {
  id: string;
  invoices: unknown[];
  ticket: { id: string; code: string; status: string; period: string };
}

/** A sale without the customer's data at `occurredAt` (default a minute ago): a ticket. */
async function sale(amount = '116.00', occurredAt = new Date(Date.now() - 60_000), formaPago?: string): Promise<Sale> {
  const res = await post('/v1/payments', {
    externalId: `T-${randomUUID()}`,
    amount,
    currency: 'MXN',
    occurredAt: occurredAt.toISOString(),
    ...(formaPago ? { formaPago } : {}),
  });
  expect(res.statusCode).toBe(201);
  return res.body as Sale;
}

/** Issues the period holding `at` (the close timer's call), as `issuedBy`. */
const issue = (at: Date, issuedBy = 'test') =>
  issueGlobal(
    api.prisma,
    globalIssuer({ ...api.payments, global: api.payments.global! }),
    { periodicidad: '01', startsOn: globalPeriodOf(at, '01', ZONE).startsOn },
    issuedBy,
  );

/** A day in the past whose period nothing else in this file touches (each test its own). */
let daysBack = 3;
const pastDay = () => new Date(Date.now() - daysBack++ * 86_400_000);

describe('tickets (PUBLICO_GENERAL_MODE=global)', () => {
  it('a sale without the customer is a ticket: no invoice, no folio; with the customer, its own Ingreso as before', async () => {
    const before = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const t = await sale();
    expect(t.invoices).toEqual([]);
    expect(t.ticket).toMatchObject({ status: 'open', code: expect.stringMatching(/^[0-9A-Z]{10}$/) });
    expect(t.ticket.period).toBe(globalPeriodOf(new Date(Date.now() - 60_000), '01', ZONE).startsOn);
    expect((await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio).toBe(before.nextFolio);

    const own = await post('/v1/payments', {
      externalId: `T-${randomUUID()}`,
      amount: '116.00',
      currency: 'MXN',
      occurredAt: new Date(Date.now() - 60_000).toISOString(),
      receptor: CUSTOMER,
    });
    expect(own.statusCode).toBe(201);
    expect((own.body as Sale).invoices).toHaveLength(1);
    expect((own.body as Sale).ticket).toBeUndefined();

    const listed = await get<{ data: { id: string; code: string }[] }>(`/v1/tickets?status=open`);
    expect(listed.data.map((x) => x.code)).toContain(t.ticket.code);
    const bad = await got.get(`${api.url}/v1/tickets?status=nope`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
    });
    expect(bad.statusCode).toBe(422);
  });

  it("a closed period's global: one CFDI to público en general, one concepto per ticket, total = the tickets' sum, valid against the XSD; issuing again returns it", async () => {
    const day = pastDay();
    const tickets = [await sale('116.00', day, '04'), await sale('58.50', day, '01'), await sale('200.00', day, '01')];
    const issued = await issue(day);
    expect(issued).toMatchObject({ created: true, tickets: 3, total: '374.50' });
    expect(issued.invoiceIds).toHaveLength(1);
    const global = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: issued.invoiceIds[0]! },
      include: { outbox: true },
    });
    expect(global).toMatchObject({ kind: 'I', status: 'pending', paymentId: null, globalPeriodId: issued.periodId });
    expect(global.outbox).toHaveLength(1);
    expect(global.total.toFixed(2)).toBe('374.50');
    const xml = global.frozenXml!;
    expect(await new SchemaValidator().validate([xml])).toEqual([]);
    const period = globalPeriodOf(day, '01', ZONE);
    expect(xml).toContain(`<cfdi:InformacionGlobal Periodicidad="01" Meses="${period.meses}" Año="${period.año}"/>`);
    expect(xml).toContain('FormaPago="01"');
    const codes = [...xml.matchAll(/NoIdentificacion="([^"]+)"/g)].map((m) => m[1]);
    expect(codes.sort()).toEqual(tickets.map((t) => t.ticket.code).sort());
    expect(parseXml(xml).attrs.find(([k]) => k === 'Total')?.[1]).toBe('374.50');

    for (const t of tickets) {
      const row = await api.prisma.ticket.findUniqueOrThrow({ where: { id: t.ticket.id } });
      expect(row).toMatchObject({ status: 'in_global', invoiceId: global.id, globalPeriodId: issued.periodId });
    }
    const again = await issue(day);
    expect(again).toMatchObject({ created: false, periodId: issued.periodId, invoiceIds: issued.invoiceIds });

    const view = await get<{ invoices: { id: string; tickets: { code: string }[] }[]; tickets: number }>(
      `/v1/globals/${issued.periodId}`,
    );
    expect(view.tickets).toBe(3);
    expect(view.invoices[0]!.tickets.map((t) => t.code).sort()).toEqual(codes.sort());
  });

  it('exactly once: instances issuing one period at the same time write one period and one set of globals', async () => {
    const day = pastDay();
    for (let i = 0; i < 4; i++) await sale('10.00', day);
    const results = await Promise.all(Array.from({ length: 6 }, () => issue(day)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.periodId)).size).toBe(1);
    const periodId = results[0]!.periodId;
    // 4 tickets, at most 3 a global: two parts.
    expect(await api.prisma.invoice.count({ where: { globalPeriodId: periodId } })).toBe(2);
    expect(await api.prisma.globalPeriod.count({ where: { id: periodId } })).toBe(1);
  });

  it('a period with more conceptos than GLOBAL_MAX_CONCEPTOS is split, the parts adding up to the tickets', async () => {
    const day = pastDay();
    const amounts = ['1.00', '2.00', '3.00', '4.00', '5.00', '6.00', '7.50'];
    for (const a of amounts) await sale(a, day);
    const issued = await issue(day);
    expect(issued.invoiceIds).toHaveLength(3);
    const parts = await api.prisma.invoice.findMany({
      where: { id: { in: issued.invoiceIds } },
      orderBy: { folio: 'asc' },
    });
    expect(parts.map((p) => (p.frozenXml!.match(/<cfdi:Concepto /g) ?? []).length)).toEqual([3, 3, 1]);
    expect(parts.reduce((sum, p) => sum + Number(p.total.toFixed(2)) * 100, 0)).toBe(2850);
    expect(issued.total).toBe('28.50');
    expect(new Set(parts.map((p) => p.stampKey)).size).toBe(3);
  });

  it('a sale recorded after its period was issued (a late webhook) goes to a later open period, never into a closed one', async () => {
    const day = pastDay();
    await sale('10.00', day);
    await issue(day);
    const late = await sale('20.00', day);
    expect(late.ticket.period > globalPeriodOf(day, '01', ZONE).startsOn).toBe(true);
    const row = await api.prisma.ticket.findUniqueOrThrow({ where: { id: late.ticket.id } });
    expect(row.status).toBe('open');
    // The period it went to has not been issued.
    expect(
      await api.prisma.globalPeriod.count({ where: { startsOn: new Date(`${late.ticket.period}T00:00:00Z`) } }),
    ).toBe(0);
  });

  it('refunds before the global reduce it (or remove the ticket); after it, an Egreso related to the global', async () => {
    const day = pastDay();
    const partial = await sale('116.00', day);
    const full = await sale('50.00', day);
    const kept = await sale('10.00', day);
    const r1 = await post(`/v1/payments/${partial.id}/refunds`, { amount: '16.00' });
    expect(r1.statusCode).toBe(201);
    expect((r1.body as { egreso: unknown }).egreso).toBeNull();
    expect((await post(`/v1/payments/${full.id}/refunds`, { amount: '50.00' })).statusCode).toBe(201);
    expect((await post(`/v1/payments/${full.id}/refunds`, { amount: '0.01' })).statusCode).toBe(422);
    expect(await api.prisma.ticket.findUniqueOrThrow({ where: { id: full.ticket.id } })).toMatchObject({
      status: 'refunded',
    });

    const issued = await issue(day);
    expect(issued).toMatchObject({ tickets: 2, total: '110.00' }); // 116 − 16 + 10
    const global = await api.prisma.invoice.findUniqueOrThrow({ where: { id: issued.invoiceIds[0]! } });
    expect(global.frozenXml).not.toContain(full.ticket.code);
    expect(global.frozenXml).toContain(kept.ticket.code);
    expect(global.total.toFixed(2)).toBe('110.00');
    expect(await api.prisma.ticket.findUniqueOrThrow({ where: { id: full.ticket.id } })).toMatchObject({
      status: 'refunded',
      invoiceId: null,
    });

    // After the global: an Egreso to público en general related to it — waiting until it is stamped.
    const r2 = await post(`/v1/payments/${kept.id}/refunds`, { amount: '5.00' });
    expect(r2.statusCode).toBe(201);
    const egreso = (r2.body as { egreso: { id: string; status: string; waitingFor: { invoiceId: string } } }).egreso;
    expect(egreso).toMatchObject({ status: 'waiting', waitingFor: { invoiceId: global.id } });
    await stampAsWorker(api.prisma, global.id, randomUUID().toUpperCase());
    const stampedUuid = (await api.prisma.invoice.findUniqueOrThrow({ where: { id: global.id } })).uuid!;
    const r3 = await post(`/v1/payments/${kept.id}/refunds`, { amount: '5.00' });
    const after = (r3.body as { egreso: { id: string; status: string } }).egreso;
    expect(after.status).toBe('pending');
    const frozen = await api.prisma.invoice.findUniqueOrThrow({ where: { id: after.id } });
    expect(frozen.relatedInvoiceId).toBe(global.id);
    expect(frozen.frozenXml).toContain(`UUID="${stampedUuid}"`);
    expect(frozen.frozenXml).toContain('Rfc="XAXX010101000"');
  });

  it('self-invoicing: the customer gets their own Ingreso once (same RFC again: the same; another RFC: refused), and the ticket leaves the global', async () => {
    const day = pastDay();
    const mine = await sale('116.00', day);
    const other = await sale('58.00', day);
    const done = await api.prisma.$transaction((tx) =>
      selfInvoice(tx, api.payments, {
        code: mine.ticket.code.toLowerCase(),
        total: '$116',
        receptor: CUSTOMER,
        email: 'x@example.com',
      }),
    );
    expect(done.created).toBe(true);
    const invoice = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: done.invoiceId },
      include: { payment: true },
    });
    expect(invoice).toMatchObject({ kind: 'I', status: 'pending', paymentId: mine.id });
    expect(invoice.frozenXml).toContain('Rfc="CACX7605101P8"');
    expect(invoice.frozenXml).not.toContain('InformacionGlobal');
    expect(invoice.payment!.email).toBe('x@example.com');
    expect((invoice.payment!.receptor as { rfc: string }).rfc).toBe('CACX7605101P8');

    const again = await api.prisma.$transaction((tx) =>
      selfInvoice(tx, api.payments, { code: mine.ticket.code, total: '116.00', receptor: CUSTOMER }),
    );
    expect(again).toMatchObject({ created: false, invoiceId: done.invoiceId, downloadToken: done.downloadToken });
    await expect(
      api.prisma.$transaction((tx) =>
        selfInvoice(tx, api.payments, {
          code: mine.ticket.code,
          total: '116.00',
          receptor: {
            ...CUSTOMER,
            rfc: 'URE180429TM6',
            nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
            regimenFiscal: '601',
            codigoPostal: '86991',
          },
        }),
      ),
    ).rejects.toMatchObject({ code: 'ticket_already_invoiced' });
    // Code and total must both match: one answer for either mistake.
    for (const wrong of [
      { code: mine.ticket.code, total: '116.01' },
      { code: 'ZZZZZZZZZZ', total: '116.00' },
    ])
      await expect(
        api.prisma.$transaction((tx) => selfInvoice(tx, api.payments, { ...wrong, receptor: CUSTOMER })),
      ).rejects.toMatchObject({ code: 'ticket_not_found' });

    const issued = await issue(day);
    expect(issued.tickets).toBe(1);
    const global = await api.prisma.invoice.findUniqueOrThrow({ where: { id: issued.invoiceIds[0]! } });
    expect(global.frozenXml).toContain(other.ticket.code);
    expect(global.frozenXml).not.toContain(mine.ticket.code);
    await expect(
      api.prisma.$transaction((tx) =>
        selfInvoice(tx, api.payments, { code: other.ticket.code, total: '58.00', receptor: CUSTOMER }),
      ),
    ).rejects.toMatchObject({ code: 'ticket_in_global' });
  });

  it('a customer whose data breaks a SAT rule is told which, and nothing is written', async () => {
    const t = await sale('116.00', pastDay());
    const folio = (await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio;
    const error = await api.prisma
      .$transaction((tx) =>
        selfInvoice(tx, api.payments, {
          code: t.ticket.code,
          total: '116.00',
          receptor: { ...CUSTOMER, regimenFiscal: '605', usoCfdi: 'G03' }, // G03 is not allowed with 605
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(JSON.stringify((error as DomainError).details)).toMatch(/UsoCFDI|usoCFDI/);
    expect((await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio).toBe(folio);
    expect(await api.prisma.ticket.findUniqueOrThrow({ where: { id: t.ticket.id } })).toMatchObject({ status: 'open' });
  });

  it('the race between self-invoicing and the period close: every ticket ends in exactly one document', async () => {
    for (let round = 0; round < 6; round++) {
      const day = pastDay();
      const amounts = ['116.00', '20.00', '30.00'];
      const tickets = [];
      for (const amount of amounts) tickets.push(await sale(amount, day));
      const self = tickets.map((t, i) =>
        api.prisma
          .$transaction((tx) =>
            selfInvoice(tx, api.payments, { code: t.ticket.code, total: amounts[i]!, receptor: CUSTOMER }),
          )
          .then(
            () => 'self' as const,
            (e: unknown) => {
              if (e instanceof DomainError && e.code === 'ticket_in_global') return 'global' as const;
              throw e;
            },
          ),
      );
      const [issued, ...outcomes] = await Promise.all([issue(day), ...self]);
      const rows = await api.prisma.ticket.findMany({ where: { id: { in: tickets.map((t) => t.ticket.id) } } });
      const globalXml = issued.invoiceIds.length
        ? (await api.prisma.invoice.findUniqueOrThrow({ where: { id: issued.invoiceIds[0]! } })).frozenXml!
        : '';
      tickets.forEach((t, i) => {
        const row = rows.find((r) => r.id === t.ticket.id)!;
        const inGlobal = globalXml.includes(t.ticket.code);
        expect(row.status).toBe(outcomes[i] === 'self' ? 'self_invoiced' : 'in_global');
        expect(inGlobal).toBe(outcomes[i] === 'global');
      });
      expect(issued.tickets).toBe(outcomes.filter((o) => o === 'global').length);
    }
  });

  it('the admin issues a period now (POST /v1/globals, admin scope); others may not; a date that starts no period is refused', async () => {
    const day = pastDay();
    await sale('10.00', day);
    const startsOn = globalPeriodOf(day, '01', ZONE).startsOn;
    expect((await post('/v1/globals', { startsOn })).statusCode).toBe(403);
    const first = await admin('/v1/globals', { startsOn });
    expect(first.statusCode).toBe(201);
    const second = await admin('/v1/globals', { startsOn });
    expect(second.statusCode).toBe(200);
    expect((second.body as { periodId: string }).periodId).toBe((first.body as { periodId: string }).periodId);
    expect((await admin('/v1/globals', { startsOn: 'tomorrow' })).statusCode).toBe(422);
    const list = await get<{ data: { startsOn: string; issuedBy: string }[] }>('/v1/globals');
    expect(list.data.find((g) => g.startsOn === startsOn)?.issuedBy).toMatch(/^admin:/);
  });

  it('a global that could not be frozen waits in needs_data, loud, and is corrected like any invoice (PATCH, re-frozen from its request)', async () => {
    const day = pastDay();
    await sale('116.00', day);
    // Issued with a CSD that is not the emisor's (as after a CSD mix-up): the global cannot be sealed.
    const issued = await issueGlobal(
      api.prisma,
      globalIssuer({ ...api.payments, csd: loadTestCsd('CACX7605101P8'), global: api.payments.global! }),
      { periodicidad: '01', startsOn: globalPeriodOf(day, '01', ZONE).startsOn },
      'test',
    );
    const id = issued.invoiceIds[0]!;
    const waiting = await api.prisma.invoice.findUniqueOrThrow({ where: { id } });
    expect(waiting).toMatchObject({ status: 'needs_data', frozenXml: null });
    expect(JSON.stringify(waiting.problems)).toMatch(/CSD|certificate|RFC/i);
    const patch = (body: object) =>
      got.patch(`${api.url}/v1/invoices/${id}`, {
        json: body,
        headers: { authorization: `Bearer ${KEYS.pos}`, 'idempotency-key': randomUUID() },
        throwHttpErrors: false,
        responseType: 'json',
      });
    expect((await patch({ receptor: { rfc: 'CACX7605101P8' }, reason: 'no' })).statusCode).toBe(422);
    const fixed = await patch({ reason: 'the emisor CSD is back' });
    expect(fixed.statusCode).toBe(200);
    const frozen = await api.prisma.invoice.findUniqueOrThrow({ where: { id } });
    expect(frozen.status).toBe('pending');
    expect(frozen.frozenXml).toContain('<cfdi:InformacionGlobal');
    expect(frozen.frozenXml).toContain('NoCertificado="30001000000500003416"'); // EKU's, the emisor's
  });

  it("the close timer's call issues every ended period (after the delay), not the one still open; the lag gauge says how late", async () => {
    const timer = globalIssuer({ ...api.payments, global: { maxConceptosPerGlobal: 1000 } });
    const closeDelayMs = 60 * 60_000;
    // Far in the past: every earlier test's periods are issued, so the lag is this one's.
    const old = new Date(Date.now() - 40 * 86_400_000);
    await sale('10.00', old);
    const today = await sale('20.00');
    const lagBefore = await globalLag(api.prisma, timer);
    expect(lagBefore.deadlineSeconds).toBe(72 * 3600);
    expect(lagBefore.oldestUnstampedSeconds).toBeGreaterThan(39 * 86_400);
    // An hour after today's period ends is not yet: only the old one is due.
    const issued = await issueDueGlobals(api.prisma, timer, closeDelayMs);
    expect(issued.map((i) => i.startsOn)).toContain(globalPeriodOf(old, '01', ZONE).startsOn);
    expect(issued.map((i) => i.startsOn)).not.toContain(today.ticket.period);
    expect(await api.prisma.ticket.findUniqueOrThrow({ where: { id: today.ticket.id } })).toMatchObject({
      status: 'open',
    });
    // Issued but not stamped: still late; stamped: the lag is today's open period's (not ended: 0).
    expect((await globalLag(api.prisma, timer)).oldestUnstampedSeconds).toBeGreaterThan(39 * 86_400);
    for (const i of issued)
      for (const id of i.invoiceIds) await stampAsWorker(api.prisma, id, randomUUID().toUpperCase());
    const unstampedLeft = await api.prisma.invoice.findMany({
      where: { globalPeriodId: { not: null }, status: { not: 'stamped' } },
      select: { id: true },
    });
    for (const { id } of unstampedLeft) await stampAsWorker(api.prisma, id, randomUUID().toUpperCase());
    expect((await globalLag(api.prisma, timer)).oldestUnstampedSeconds).toBe(0);
    // Once today's period has ended and the delay passed, it is due too.
    const tomorrow = new Date(Date.now() + 2 * 86_400_000);
    expect((await issueDueGlobals(api.prisma, timer, closeDelayMs, tomorrow)).map((i) => i.startsOn)).toContain(
      today.ticket.period,
    );
  });

  it('a refund racing the close: the refund is either in the global (reduced) or an Egreso of it, never both or neither', async () => {
    for (let round = 0; round < 4; round++) {
      const day = pastDay();
      const t = await sale('100.00', day);
      const refund = api.prisma.$transaction((tx) =>
        recordRefund(tx, api.payments, {
          payment: { id: t.id },
          provider: 'test',
          externalId: `r-${randomUUID()}`,
          amount: '40.00',
          occurredAt: new Date(),
        }),
      );
      const [issued, recorded] = await Promise.all([issue(day), refund]);
      if (recorded.egresoId === null) expect(issued.total).toBe('60.00');
      else {
        expect(issued.total).toBe('100.00');
        const egreso = await api.prisma.invoice.findUniqueOrThrow({ where: { id: recorded.egresoId } });
        expect(egreso.relatedInvoiceId).toBe(issued.invoiceIds[0]);
      }
    }
  });
});
