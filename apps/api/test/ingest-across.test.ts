import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import got from 'got';
import pg from 'pg';
import { pino } from 'pino';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { OrganizationClients } from '@timbra/db/organizations';
import { loadTestCsd, testCsdFiles } from '@timbra/test-support';
import type { RecordPaymentDeps } from '../src/payments/record-payment.ts';
import type { WebhookDelivery } from '../src/provider-webhooks/record-webhook.ts';
import { webhookIngestAcross } from '../src/provider-webhooks/webhook-ingest.ts';
import { EMISOR, startApi, type TestApi } from './helpers.ts';

// Platform mode's shared ingest (main.ts): deliveries to several organizations go into one group
// commit, each batch one transaction naming their organizations. Each payment still takes its own
// organization's folio and is sealed by its own emisor; a refund in the batch is recorded in its own
// organization (the transaction narrowed to it). A delivery whose write fails rolls its batch back,
// and the others of the batch, whatever their organization, are then recorded each alone.

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
const CACX = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };

let api: TestApi;
let clients: OrganizationClients;
let owner: pg.Client;
let home: RecordPaymentDeps;
let other: RecordPaymentDeps;

beforeAll(async () => {
  api = await startApi({ platform: { key: PLATFORM_KEY, vault } });
  const call = (path: string, body: object) =>
    got.post(`${api.url}${path}`, { json: body, headers: { authorization: `Bearer ${PLATFORM_KEY}` } }).json<{
      id: string;
    }>();
  const { id } = await call('/v1/organizations', CACX);
  const f = testCsdFiles('CACX7605101P8');
  await call(`/v1/organizations/${id}/csds`, {
    certificate: Buffer.from(f.cer).toString('base64'),
    privateKey: Buffer.from(f.key).toString('base64'),
    password: f.password,
  });
  home = api.payments;
  // The second organization's dependencies, as organizationApis gives its API: its CSD, its facts.
  other = {
    ...home,
    organizationId: id,
    csd: loadTestCsd('CACX7605101P8'),
    settings: { ...home.settings, emisor: CACX },
  };
  clients = new OrganizationClients(api.db.url, { poolSize: 4 });
  owner = new pg.Client({ connectionString: api.db.url });
  await owner.connect();
});
afterAll(async () => {
  await owner.end();
  await clients.close();
  await api.close();
});

const sale = (externalId: string): WebhookDelivery => ({
  event: {
    provider: 'stripe',
    eventId: `evt_${externalId}`,
    type: 'payment_intent.succeeded',
    result: 'accepted',
    payload: {},
  },
  payment: {
    provider: 'stripe',
    externalId,
    amount: '116.00',
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000),
    receptor: null,
    description: 'Colegiatura',
    formaPago: '04',
  },
});

/** The shared ingest with one transaction at a time: what is submitted while one runs goes in the next, together. */
const sharedIngest = () =>
  webhookIngestAcross(clients.across(), pino({ level: 'silent' }), { maxBatch: 32, maxInFlight: 1 });

const rowsOf = async (table: 'payments' | 'refunds', externalIds: string[]) =>
  (
    await owner.query<{ e: string; org: string; tx: string }>(
      `SELECT external_id AS e, organization_id::text AS org, xmin::text AS tx FROM ${table}
       WHERE external_id = ANY($1) ORDER BY external_id`,
      [externalIds],
    )
  ).rows;

describe('one group commit for every organization’s webhooks', () => {
  it('records two organizations’ payments in one transaction, each in its own organization, serie and seal', async () => {
    const ingest = sharedIngest();
    const [h, o] = [ingest.for(home), ingest.for(other)];
    const n = randomUUID().slice(0, 8);
    // The first takes the transaction; the next five wait for it and go together in the next one.
    const answers = await Promise.all([
      h.submit(sale(`h0-${n}`)),
      h.submit(sale(`h1-${n}`)),
      o.submit(sale(`o1-${n}`)),
      h.submit(sale(`h2-${n}`)),
      o.submit(sale(`o2-${n}`)),
      o.submit(sale(`o1-${n}`)),
    ]);
    expect(answers).toEqual([true, true, true, true, true, false]);

    const rows = await rowsOf('payments', [`h1-${n}`, `o1-${n}`, `h2-${n}`, `o2-${n}`]);
    expect(rows.map((r) => [r.e, r.org])).toEqual([
      [`h1-${n}`, home.organizationId],
      [`h2-${n}`, home.organizationId],
      [`o1-${n}`, other.organizationId],
      [`o2-${n}`, other.organizationId],
    ]);
    // One transaction wrote the four.
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);

    const { rows: invoices } = await owner.query<{
      e: string;
      org: string;
      folio: number;
      xml: string;
      outbox: string;
    }>(
      `SELECT p.external_id AS e, i.organization_id::text AS org, i.folio, i.frozen_xml AS xml,
              o.organization_id::text AS outbox
       FROM invoices i JOIN payments p ON p.id = i.payment_id JOIN outbox o ON o.invoice_id = i.id
       WHERE p.external_id LIKE $1 ORDER BY i.organization_id, i.folio`,
      [`%-${n}`],
    );
    const byOrg = (org: string) => invoices.filter((i) => i.org === org);
    // The other organization's first two folios of its own serie A; the home one's three in a row.
    expect(byOrg(other.organizationId).map((i) => [i.e, i.folio])).toEqual([
      [`o1-${n}`, 1],
      [`o2-${n}`, 2],
    ]);
    const homeFolios = byOrg(home.organizationId).map((i) => i.folio);
    expect(homeFolios).toEqual([homeFolios[0], homeFolios[0]! + 1, homeFolios[0]! + 2]);
    for (const i of invoices) {
      expect(i.outbox).toBe(i.org);
      expect(i.xml).toContain(`Rfc="${i.org === home.organizationId ? EMISOR.rfc : CACX.rfc}"`);
    }
  });

  it('records a refund in its own organization beside another organization’s payment', async () => {
    const ingest = sharedIngest();
    const [h, o] = [ingest.for(home), ingest.for(other)];
    const n = randomUUID().slice(0, 8);
    expect(await h.submit(sale(`paid-${n}`))).toBe(true);
    const refund: WebhookDelivery = {
      event: { provider: 'stripe', eventId: `evt_re-${n}`, type: 'refund.created', result: 'accepted', payload: {} },
      refunds: [
        {
          paymentProvider: 'stripe',
          paymentExternalId: `paid-${n}`,
          provider: 'stripe',
          externalId: `re-${n}`,
          amount: '58.00',
          occurredAt: new Date(Date.now() - 30_000),
        },
      ],
    };
    const answers = await Promise.all([
      o.submit(sale(`first-${n}`)),
      o.submit(sale(`beside-${n}`)),
      h.submit(refund),
      o.submit(sale(`after-${n}`)),
    ]);
    expect(answers).toEqual([true, true, true, true]);
    const [refunded] = await rowsOf('refunds', [`re-${n}`]);
    expect(refunded!.org).toBe(home.organizationId);
    const payments = await rowsOf('payments', [`beside-${n}`, `after-${n}`]);
    expect(payments.map((p) => p.org)).toEqual([other.organizationId, other.organizationId]);
    expect(new Set([refunded!.tx, ...payments.map((p) => p.tx)]).size).toBe(1);
    const { rows: egreso } = await owner.query<{ org: string; serie: string }>(
      `SELECT i.organization_id::text AS org, i.serie FROM invoices i JOIN refunds r ON r.id = i.refund_id
       WHERE r.external_id = $1`,
      [`re-${n}`],
    );
    expect(egreso).toEqual([{ org: home.organizationId, serie: 'NC' }]);
  });

  it('fails only the delivery whose write fails: the other organizations’ in its batch are recorded', async () => {
    const ingest = sharedIngest();
    // An organization the database does not have: its rows break a foreign key inside the batch.
    const [h, o, gone] = [ingest.for(home), ingest.for(other), ingest.for({ ...other, organizationId: randomUUID() })];
    const n = randomUUID().slice(0, 8);
    const first = h.submit(sale(`lead-${n}`));
    const batch = [o.submit(sale(`o-${n}`)), gone.submit(sale(`gone-${n}`)), h.submit(sale(`h-${n}`))];
    const settled = await Promise.allSettled([first, ...batch]);
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const rows = await rowsOf('payments', [`o-${n}`, `gone-${n}`, `h-${n}`]);
    expect(rows.map((r) => [r.e, r.org])).toEqual([
      [`h-${n}`, home.organizationId],
      [`o-${n}`, other.organizationId],
    ]);
    // The shared batch rolled back whole; each was then recorded in its own transaction.
    expect(new Set(rows.map((r) => r.tx)).size).toBe(2);
    const { rows: invoices } = await owner.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM invoices i JOIN payments p ON p.id = i.payment_id JOIN outbox o ON o.invoice_id = i.id
       WHERE p.external_id = ANY($1)`,
      [[`o-${n}`, `h-${n}`]],
    );
    expect(invoices).toEqual([{ n: 2 }]);
  });
});
