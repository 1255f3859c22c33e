import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { APP_ROLE, OrganizationClients } from '../src/organizations/index.ts';
import { claimOutboxAcross, loadStampRows, persistStamps, recordPacCallsInFlight } from '../src/outbox/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

// Statements that work for several organizations at once (migration 20270114000000): a transaction
// names the organizations of its batch, the policies hold it to them, and the stamper's statements
// match each item to its own organization's rows.

let db: TestDatabase;
let owner: pg.Client;
let app: pg.Client;
let clients: OrganizationClients;
const ids = { a: randomUUID(), b: randomUUID(), c: randomUUID() };

beforeAll(async () => {
  db = await createTestDatabase();
  owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  for (const [id, rfc] of [
    [ids.a, 'EKU9003173C9'],
    [ids.b, 'CACX7605101P8'],
    [ids.c, 'IIA040805DZ4'],
  ] as const) {
    await owner.query(
      `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, 'E', '601', '42501')`,
      [id, rfc],
    );
    await owner.query(
      `INSERT INTO payments (id, organization_id, provider, external_id, amount, currency, occurred_at)
       VALUES (gen_random_uuid(), $1, 'api', $2, 1, 'MXN', now())`,
      [id, `${rfc.slice(0, 1)}-1`],
    );
  }
  // A has an endpoint for every event; B and C none.
  await owner.query(
    `INSERT INTO webhook_endpoints (id, organization_id, url, events, secret, status)
     VALUES (gen_random_uuid(), $1, 'https://a.example/hook', '{*}', 'whsec_a', 'enabled')`,
    [ids.a],
  );
  app = new pg.Client({ connectionString: db.url, options: `-c role=${APP_ROLE}` });
  await app.connect();
  clients = new OrganizationClients(db.url, { poolSize: 1 });
});
afterAll(async () => {
  await clients.close();
  await app.end();
  await owner.end();
  await db.drop();
});

/** Runs `fn` in a transaction of the apps' role naming `orgs` (as the lean runner names them), rolled back. */
async function naming<T>(orgs: string[], fn: () => Promise<T>): Promise<T> {
  await app.query(`BEGIN; SELECT set_config('app.org', '${orgs.join(',')}', true)`);
  try {
    return await fn();
  } finally {
    await app.query('ROLLBACK');
  }
}
const externalIds = async () =>
  (await app.query<{ e: string }>(`SELECT external_id AS e FROM payments ORDER BY 1`)).rows.map((r) => r.e);
const insertPayment = (org: string | null, externalId: string) =>
  app.query(
    `INSERT INTO payments (id, ${org ? 'organization_id, ' : ''}provider, external_id, amount, currency, occurred_at)
     VALUES (timbra_uuid7(), ${org ? `'${org}', ` : ''}'api', '${externalId}', 1, 'MXN', now())`,
  );

describe('a transaction that names several organizations', () => {
  it('sees the rows of those it names and none of another’s; after it, the session names none', async () => {
    expect(await naming([ids.a, ids.b], externalIds)).toEqual(['C-1', 'E-1']);
    expect(await naming([ids.b, ids.c], externalIds)).toEqual(['C-1', 'I-1']);
    expect(await externalIds()).toEqual([]);
  });

  it('writes only rows of those it names, each naming its own: there is no default organization', async () => {
    await expect(naming([ids.a, ids.b], () => insertPayment(ids.c, 'I-2'))).rejects.toThrow(/row-level security/);
    // No organization given: NULL, which neither the policy nor NOT NULL lets through.
    await expect(naming([ids.a, ids.b], () => insertPayment(null, 'X-1'))).rejects.toThrow(
      /row-level security|"organization_id"/,
    );
    await expect(
      naming([ids.a, ids.b], () => app.query(`UPDATE payments SET organization_id = '${ids.c}'`)),
    ).rejects.toThrow(/row-level security/);
    expect(await naming([ids.a, ids.b], async () => (await insertPayment(ids.b, 'C-9')).rowCount)).toBe(1);
  });

  it('writes each event in its row’s organization, delivered only to that organization’s endpoints', async () => {
    const written = await naming([ids.a, ids.b], async () => {
      // Two organizations' payments in one statement.
      await app.query(
        `INSERT INTO payments (id, organization_id, provider, external_id, amount, currency, occurred_at)
         VALUES (timbra_uuid7(), '${ids.a}', 'api', 'A-7', 1, 'MXN', now()),
                (timbra_uuid7(), '${ids.b}', 'api', 'B-7', 1, 'MXN', now())`,
      );
      return (
        await app.query<{ org: string; payment: string; deliveries: number }>(
          `SELECT e.organization_id::text AS org, p.external_id AS payment,
                  (SELECT count(*)::int FROM deliveries d
                   WHERE d.event_id = e.id AND d.organization_id = e.organization_id) AS deliveries
           FROM events e JOIN payments p ON p.id = e.payment_id AND p.organization_id = e.organization_id
           WHERE p.external_id IN ('A-7', 'B-7') ORDER BY 2`,
        )
      ).rows;
    });
    expect(written).toEqual([
      { org: ids.a, payment: 'A-7', deliveries: 1 },
      { org: ids.b, payment: 'B-7', deliveries: 0 },
    ]);
  });
});

let folio = 0;
/** A frozen invoice of `org`, pending, with its stamp outbox row enqueued. */
async function frozen(org: string) {
  folio++;
  const key = `k-${folio}-${randomUUID()}`;
  const { rows } = await owner.query<{ id: string }>(
    `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
     VALUES (gen_random_uuid(), $1, 'I', 'A', $2, 'MXN', 1, 1, 'pending', $3, '<cfdi/>') RETURNING id`,
    [org, folio, key],
  );
  const outbox = await owner.query<{ id: string }>(
    `INSERT INTO outbox (id, organization_id, kind, invoice_id, stamp_key, status)
     VALUES (gen_random_uuid(), $1, 'stamp', $2, $3, 'enqueued') RETURNING id`,
    [org, rows[0]!.id, key],
  );
  return { invoiceId: rows[0]!.id, outboxId: outbox.rows[0]!.id, version: 1, organizationId: org };
}

describe('the stamper’s statements across organizations (OrganizationClients.across)', () => {
  it('load, record in flight and persist each item on its own organization’s rows, in one statement each', async () => {
    const [a, b] = [await frozen(ids.a), await frozen(ids.b)];
    const c = await frozen(ids.c);
    const across = clients.across();
    const batch = [ids.a, ids.b];
    // A's row asked as B's, and C's (not in the batch), are not found.
    const loaded = await across.run(batch, (db) =>
      loadStampRows(db, [a, b, { ...a, organizationId: ids.b }, c, { ...c, organizationId: ids.a }]),
    );
    expect(loaded.map((r) => r?.invoiceId)).toEqual([a.invoiceId, b.invoiceId, undefined, undefined, undefined]);
    // A first call asked with the load is recorded in the item's own organization only.
    const [d, e] = [await frozen(ids.a), await frozen(ids.b)];
    const first = () => ({ pac: 'primary', id: randomUUID() });
    const recorded = await across.run(batch, (db) =>
      loadStampRows(db, [
        { ...d, firstCall: first() },
        { ...e, organizationId: ids.a, firstCall: first() },
        { ...e, firstCall: first() },
      ]),
    );
    expect(Array.from(recorded, (r) => (r ? r.recordedCall !== undefined : 'not found'))).toEqual([
      true,
      'not found',
      true,
    ]);
    const { rows: ledger } = await owner.query<{ organization_id: string }>(
      `SELECT organization_id FROM pac_attempts WHERE id = ANY($1::uuid[]) ORDER BY organization_id = $2 DESC`,
      [recorded.flatMap((r) => (r?.recordedCall ? [r.recordedCall.id] : [])), ids.a],
    );
    expect(ledger.map((r) => r.organization_id)).toEqual([ids.a, ids.b]);

    const call = (r: typeof a, organizationId = r.organizationId) => ({
      ...r,
      organizationId,
      pac: 'primary',
      id: randomUUID(),
    });
    const calls = [call(a), call(b), call(a, ids.b)];
    expect(await across.run(batch, (db) => recordPacCallsInFlight(db, calls))).toEqual([true, true, false]);

    const stamp = (r: typeof a, organizationId = r.organizationId) => ({
      row: { ...r, organizationId },
      stamp: { uuid: randomUUID().toUpperCase(), tfdXml: '<tfd/>', pac: 'primary' },
      calls: [
        { id: calls.find((x) => x.outboxId === r.outboxId)!.id, pac: 'primary', outcome: 'stamped', durationMs: 5 },
      ],
    });
    const persisted = await across.run(batch, (db) => persistStamps(db, [stamp(a), stamp(b)]));
    expect(persisted.map((p) => p.written)).toEqual([true, true]);
    // An item naming the wrong organization of the batch for its invoice writes nothing of it.
    const wrong = await frozen(ids.a);
    const misnamed = { ...stamp(a, ids.b), row: { ...wrong, organizationId: ids.b }, calls: [] };
    expect((await across.run(batch, (db) => persistStamps(db, [misnamed])))[0]!.written).toBe(false);
    const { rows } = await owner.query<{ org: string; status: string; outbox: string; ledger: string; event: string }>(
      `SELECT i.organization_id::text AS org, i.status, o.status AS outbox,
              (SELECT string_agg(p.organization_id::text || ':' || p.outcome, ',') FROM pac_attempts p WHERE p.invoice_id = i.id) AS ledger,
              (SELECT string_agg(e.organization_id::text || ':' || e.type, ',') FROM events e WHERE e.invoice_id = i.id) AS event
       FROM invoices i JOIN outbox o ON o.invoice_id = i.id WHERE i.id = ANY($1::uuid[]) ORDER BY i.folio`,
      [[a.invoiceId, b.invoiceId, c.invoiceId, wrong.invoiceId]],
    );
    expect(rows).toEqual([
      { org: ids.a, status: 'stamped', outbox: 'done', ledger: `${ids.a}:stamped`, event: `${ids.a}:invoice.stamped` },
      { org: ids.b, status: 'stamped', outbox: 'done', ledger: `${ids.b}:stamped`, event: `${ids.b}:invoice.stamped` },
      { org: ids.c, status: 'pending', outbox: 'enqueued', ledger: null, event: null },
      { org: ids.a, status: 'pending', outbox: 'enqueued', ledger: null, event: null },
    ]);
  });

  it('names only organizations by their ids, and at least one', async () => {
    const across = clients.across();
    await expect(across.run([`${ids.a}'; SELECT 1; --`], () => Promise.resolve(1))).rejects.toThrow(/their ids/);
    await expect(across.run([], () => Promise.resolve(1))).rejects.toThrow(/their ids/);
  });
});

describe('the relay’s claim across organizations (claimOutboxAcross)', () => {
  /** A pending row of `org`, due `ageSeconds` ago. */
  async function pending(org: string, ageSeconds: number) {
    const row = await frozen(org);
    await owner.query(
      `UPDATE outbox SET status = 'pending', enqueued_at = NULL, available_at = now() - make_interval(secs => $2)
       WHERE id = $1`,
      [row.outboxId, ageSeconds],
    );
    return row.outboxId;
  }
  const statusOf = async (id: string) =>
    (await owner.query<{ status: string }>(`SELECT status FROM outbox WHERE id = $1`, [id])).rows[0]!.status;

  it('claims each named organization’s oldest due rows, up to the limit, and none of another’s', async () => {
    await owner.query(`UPDATE outbox SET status = 'done' WHERE status <> 'done'`);
    const a = [await pending(ids.a, 30), await pending(ids.a, 20), await pending(ids.a, 10)];
    const b = [await pending(ids.b, 5)];
    const c = [await pending(ids.c, 40)];
    const claimed = await clients
      .across()
      .run([ids.a, ids.b], (db) => db.transaction((tx) => claimOutboxAcross(tx, [ids.b, ids.a], 2)));
    expect(claimed.map((p) => [p.organizationId, p.rows.map((r) => r.id), p.capped])).toEqual([
      [ids.b, b, false],
      [ids.a, a.slice(0, 2), false],
    ]);
    expect(await Promise.all([...a, ...b, ...c].map(statusOf))).toEqual([
      'enqueued',
      'enqueued',
      'pending',
      'enqueued',
      'pending',
    ]);
    // C is not named: asking for it claims nothing of it (the session does not see its rows).
    const none = await clients
      .across()
      .run([ids.a, ids.b], (db) => db.transaction((tx) => claimOutboxAcross(tx, [ids.c], 2)));
    expect(none).toEqual([{ organizationId: ids.c, rows: [], capped: false }]);
    expect(await statusOf(c[0]!)).toBe('pending');
  });

  it('keeps each organization within its share of the queue, and says when it is full', async () => {
    // A has two rows enqueued (above): a share of three leaves it room for one.
    const a = [await pending(ids.a, 3), await pending(ids.a, 2)];
    const b = [await pending(ids.b, 3), await pending(ids.b, 2)];
    const share = { maxEnqueued: 3, windowMs: 60_000 };
    const claimed = await clients
      .across()
      .run([ids.a, ids.b], (db) => db.transaction((tx) => claimOutboxAcross(tx, [ids.a, ids.b], 10, share)));
    // A: its oldest pending row of before, then one of these is beyond its share.
    expect(claimed[0]!.rows).toHaveLength(1);
    expect(claimed[0]!.capped).toBe(true);
    // B had one enqueued: room for two, both taken; its share is now full.
    expect(claimed[1]!.rows.map((r) => r.id)).toEqual(b);
    expect(claimed[1]!.capped).toBe(true);
    expect(await statusOf(a[1]!)).toBe('pending');
  });
});
