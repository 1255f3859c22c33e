import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { SerieNotConfiguredError } from '../src/invoices/folios.ts';
import { insertInvoices, type NewInvoice } from '../src/invoices/index.ts';
import { narrowedTo, OrganizationClients } from '../src/organizations/index.ts';
import { OUTBOX_CHANNEL } from '../src/outbox/index.ts';
import { insertPaymentsTakingFolios, knownPayments, type NewPayment } from '../src/payments/index.ts';
import { execute, queryRows, type RawDb } from '../src/sql.ts';
import { Prisma } from '../src/generated/client.ts';
import { z } from 'zod';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';
import { claimWebhookEvents } from '../src/webhook-events/index.ts';

// The API's ingest statements for several organizations in one transaction (a batch of webhooks
// spread over organizations): events, payments with their folios, invoices with their outbox rows,
// each written in its own organization, and the transaction narrowed to one for the rest.

let db: TestDatabase;
let owner: pg.Client;
let clients: OrganizationClients;
const ids = { a: randomUUID(), b: randomUUID(), c: randomUUID() };

beforeAll(async () => {
  db = await createTestDatabase();
  owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  for (const [id, rfc, next] of [
    [ids.a, 'EKU9003173C9', 1],
    [ids.b, 'CACX7605101P8', 10],
    [ids.c, 'IIA040805DZ4', 1],
  ] as const) {
    await owner.query(
      `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, 'E', '601', '42501')`,
      [id, rfc],
    );
    await owner.query(
      `INSERT INTO series (id, organization_id, serie, kind, next_folio) VALUES (gen_random_uuid(), $1, $2, 'I', $3)`,
      [id, `S${rfc.slice(0, 1)}`, next],
    );
  }
  clients = new OrganizationClients(db.url, { poolSize: 2 });
});
afterAll(async () => {
  await clients.close();
  await owner.end();
  await db.drop();
});

/** `fn` in one transaction whose session names `orgs` (as the API's shared ingest runs a batch). */
const inTransaction = <T>(orgs: string[], fn: (tx: RawDb) => Promise<T>): Promise<T> =>
  clients.across().run(orgs, (lean) => lean.transaction(fn));

const payment = (externalId: string): NewPayment => ({
  provider: 'stripe',
  externalId,
  amount: '116.00',
  currency: 'MXN',
  occurredAt: new Date(),
  receptor: null,
  description: null,
  formaPago: '04',
  paymentTerms: 'single',
});
const event = (eventId: string, organizationId: string) => ({
  provider: 'stripe',
  eventId,
  type: 'payment_intent.succeeded',
  result: 'accepted' as const,
  payload: {},
  organizationId,
});

describe('events and payments of several organizations in one transaction', () => {
  it('claims each event in its own organization: the same event id is new once in each', async () => {
    const claimed = await inTransaction([ids.a, ids.b], (tx) =>
      claimWebhookEvents(tx, [event('evt_1', ids.a), event('evt_1', ids.b), event('evt_1', ids.a)]),
    );
    expect(claimed).toEqual([true, true, false]);
    expect(
      await inTransaction([ids.a, ids.b], (tx) =>
        claimWebhookEvents(tx, [event('evt_1', ids.b), event('evt_2', ids.b)]),
      ),
    ).toEqual([false, true]);
    // C is not named by the transaction: its event is refused, not written elsewhere.
    await expect(
      inTransaction([ids.a, ids.b], (tx) => claimWebhookEvents(tx, [event('evt_3', ids.c)])),
    ).rejects.toThrow(/row-level security/);
    const { rows } = await owner.query<{ org: string; n: number }>(
      `SELECT organization_id::text AS org, count(*)::int AS n FROM webhook_events GROUP BY 1 ORDER BY 2, 1`,
    );
    expect(rows).toEqual(
      [
        { org: ids.a, n: 1 },
        { org: ids.b, n: 2 },
      ].sort((x, y) => x.n - y.n),
    );
  });

  it('takes each payment’s folio from its own organization’s serie, gapless, once per payment', async () => {
    const inserted = await inTransaction([ids.a, ids.b], (tx) =>
      insertPaymentsTakingFolios(tx, [
        { ...payment('pi_1'), organizationId: ids.a, serie: 'SE' },
        { ...payment('pi_1'), organizationId: ids.b, serie: 'SC' },
        { ...payment('pi_2'), organizationId: ids.a, serie: 'SE' },
        { ...payment('pi_1'), organizationId: ids.a, serie: 'SE' },
        { ...payment('pi_2'), organizationId: ids.b, serie: 'SC' },
      ]),
    );
    // The repeated A pi_1 (index 3) is inserted once, with its first mention's folio.
    expect(inserted.map((p) => [p.index, p.folio]).sort((x, y) => x[0]! - y[0]!)).toEqual([
      [0, 1],
      [1, 10],
      [2, 2],
      [4, 11],
    ]);
    const { rows } = await owner.query<{ org: string; serie: string; next: number }>(
      `SELECT organization_id::text AS org, serie, next_folio AS next FROM series ORDER BY serie`,
    );
    expect(rows).toEqual([
      { org: ids.b, serie: 'SC', next: 12 },
      { org: ids.a, serie: 'SE', next: 3 },
      { org: ids.c, serie: 'SI', next: 1 },
    ]);
    const payments = await owner.query<{ org: string; e: string }>(
      `SELECT organization_id::text AS org, external_id AS e FROM payments`,
    );
    expect(payments.rows.map((p) => `${p.e} ${p.org}`).sort()).toEqual(
      [`pi_1 ${ids.a}`, `pi_1 ${ids.b}`, `pi_2 ${ids.a}`, `pi_2 ${ids.b}`].sort(),
    );
    // Found again, each in its own organization.
    const known = await inTransaction([ids.a, ids.b], (tx) =>
      knownPayments(tx, [
        { provider: 'stripe', externalId: 'pi_1', organizationId: ids.b },
        { provider: 'stripe', externalId: 'pi_9', organizationId: ids.a },
      ]),
    );
    expect(known.map((k) => [k.organizationId, k.externalId])).toEqual([[ids.b, 'pi_1']]);
  });

  it('refuses a serie another organization has, and writes nothing of the batch', async () => {
    const attempt = inTransaction([ids.a, ids.b], (tx) =>
      insertPaymentsTakingFolios(tx, [
        { ...payment('pi_5'), organizationId: ids.a, serie: 'SE' },
        { ...payment('pi_5'), organizationId: ids.b, serie: 'SE' },
      ]),
    );
    await expect(attempt).rejects.toThrow(SerieNotConfiguredError);
    const { rows } = await owner.query(`SELECT 1 FROM payments WHERE external_id = 'pi_5'`);
    expect(rows).toHaveLength(0);
  });

  it('writes each invoice and its outbox row in its organization, and wakes the relay for each', async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (n) => payloads.push(n.payload ?? ''));
    await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
    const invoice = (organizationId: string, folio: number): NewInvoice => ({
      organizationId,
      kind: 'I',
      serie: 'X',
      folio,
      paymentId: null,
      // The same stamp key in two organizations: two documents.
      stampKey: 'same-sale',
      moneda: 'MXN',
      status: 'pending',
      frozen: { xml: '<cfdi/>', cadenaOriginal: '||', fecha: '2026-12-07T00:00:00', subTotal: '100', total: '116' },
      totals: { subTotal: '100', total: '116' },
    });
    const invoiceIds = await inTransaction([ids.a, ids.b], (tx) =>
      insertInvoices(tx, null, [invoice(ids.a, 7), invoice(ids.b, 7)]),
    );
    const { rows } = await owner.query<{ id: string; org: string; outbox: string }>(
      `SELECT i.id, i.organization_id::text AS org, o.organization_id::text AS outbox
       FROM invoices i JOIN outbox o ON o.invoice_id = i.id WHERE i.stamp_key = 'same-sale'`,
    );
    expect(rows.map((r) => [r.id, r.org, r.outbox]).sort()).toEqual(
      [
        [invoiceIds[0], ids.a, ids.a],
        [invoiceIds[1], ids.b, ids.b],
      ].sort(),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await listener.end();
    expect(payloads.sort()).toEqual([ids.a, ids.b].sort());
  });
});

describe('narrowedTo: a transaction of several organizations working for one of them', () => {
  const visible = async (tx: RawDb) =>
    (
      await queryRows(
        tx,
        z.object({ org: z.string() }),
        Prisma.sql`SELECT DISTINCT organization_id::text AS org FROM payments`,
      )
    )
      .map((r) => r.org)
      .sort();

  it('sees and writes that one’s rows alone, then the whole set again', async () => {
    const seen = await inTransaction([ids.a, ids.b], async (tx) => {
      const inside = await narrowedTo(tx, ids.b, async () => {
        // No organization given: the column default is the narrowed one's.
        await execute(
          tx,
          Prisma.sql`INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
                     VALUES (timbra_uuid7(), 'api', 'narrowed', 1, 'MXN', now())`,
        );
        return visible(tx);
      });
      return { inside, after: await visible(tx) };
    });
    expect(seen).toEqual({ inside: [ids.b], after: [ids.a, ids.b].sort() });
    const { rows } = await owner.query<{ org: string }>(
      `SELECT organization_id::text AS org FROM payments WHERE external_id = 'narrowed'`,
    );
    expect(rows).toEqual([{ org: ids.b }]);
  });

  it('cannot narrow to an organization the transaction does not name', async () => {
    await expect(inTransaction([ids.a, ids.b], (tx) => narrowedTo(tx, ids.c, () => visible(tx)))).rejects.toThrow(
      /does not work for organization/,
    );
  });
});
