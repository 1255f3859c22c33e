/**
 * The events the database writes for the merchant's webhooks and the customer's email (migrations
 * 20261213000000 and 20261217000000): written set-wise, once a statement, they must still be one
 * event per row whose change they report, each fanned out to the subscribed endpoints and the
 * payment's address, with one NOTIFY for the dispatcher.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { databaseWithEmisor, TEST_EMISOR_ID, walkInvoiceTo } from '../src/testing.ts';

let t: Awaited<ReturnType<typeof databaseWithEmisor>>;
let listener: pg.Client;
const notified: string[] = [];
beforeAll(async () => {
  t = await databaseWithEmisor();
  listener = new pg.Client({ connectionString: t.db.url });
  await listener.connect();
  listener.on('notification', (n) => notified.push(n.payload ?? ''));
  await listener.query('LISTEN timbra_deliveries');
});
afterAll(async () => {
  await listener.end();
  await t.close();
});

/** NOTIFYs delivered for what `work` commits (a NOTIFY is delivered at commit). */
async function notifiesOf(work: () => Promise<unknown>): Promise<number> {
  await new Promise((r) => setTimeout(r, 100));
  const before = notified.length;
  await work();
  await new Promise((r) => setTimeout(r, 300));
  return notified.length - before;
}

const rows = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
  (await t.sql.query<T>(text, values)).rows;

describe('events written set-wise', () => {
  it("one statement's rows: an event each, its deliveries, and one NOTIFY", async () => {
    const [all, stampedOnly, disabled] = (
      await rows<{ id: string }>(
        `INSERT INTO webhook_endpoints (id, url, events, secret, status) VALUES
           (gen_random_uuid(), 'http://127.0.0.1:1/all', ARRAY['*'], 's', 'enabled'),
           (gen_random_uuid(), 'http://127.0.0.1:1/stamped', ARRAY['invoice.stamped'], 's', 'enabled'),
           (gen_random_uuid(), 'http://127.0.0.1:1/off', ARRAY['*'], 's', 'disabled')
         RETURNING id`,
      )
    ).map((r) => r.id);

    // Three payments in one statement, two of them with the customer's address.
    let payments: string[] = [];
    expect(
      await notifiesOf(async () => {
        payments = (
          await rows<{ id: string }>(
            `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at, email)
             SELECT timbra_uuid7(), 'rest', 'ev-' || g, 116.00, 'MXN', now(), CASE WHEN g < 3 THEN 'c' || g || '@example.com' END
             FROM generate_series(1, 3) g ORDER BY g RETURNING id`,
          )
        ).map((r) => r.id);
      }),
    ).toBe(1);
    const recorded = await rows<{ payment_id: string; data: { externalId: string; amount: string } }>(
      // (Not by id: ids made in the same millisecond are in random order.)
      `SELECT payment_id, data FROM events WHERE type = 'payment.recorded' ORDER BY data->>'externalId'`,
    );
    expect(recorded.map((e) => [e.payment_id, e.data.externalId, e.data.amount])).toEqual(
      payments.map((p, i) => [p, `ev-${i + 1}`, '116.00']),
    );

    // Their invoices (one statement), then one moved to cancel_requested the way the worker would.
    const invoices = (
      await rows<{ id: string }>(
        `INSERT INTO invoices (id, organization_id, payment_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
         SELECT timbra_uuid7(), $1, p, 'I', 'EV', n, 'MXN', 100, 116, 'pending', 'EV-' || n, '<x/>'
         FROM unnest($2::uuid[]) WITH ORDINALITY AS u(p, n) ORDER BY n RETURNING id`,
        [TEST_EMISOR_ID, payments],
      )
    ).map((r) => r.id);
    await t.sql.query(`UPDATE invoices SET uuid = upper(gen_random_uuid()::text), pac = 'primary' WHERE id = $1`, [
      invoices[2],
    ]);
    await walkInvoiceTo(t.prisma, invoices[2]!, 'cancel_requested');
    const eventsBefore = (await rows<{ id: string }>(`SELECT id FROM events`)).map((r) => r.id);

    // One UPDATE: two invoices stamped, and the third's cancellation rejected by the SAT.
    expect(
      await notifiesOf(() =>
        t.sql.query(
          `UPDATE invoices SET status = 'stamped', uuid = coalesce(uuid, upper(gen_random_uuid()::text)), pac = 'primary',
                               stamped_at = coalesce(stamped_at, now()) WHERE id = ANY ($1)`,
          [invoices],
        ),
      ),
    ).toBe(1);
    const written = await rows<{
      invoice_id: string;
      type: string;
      status: string;
      endpoints: string[];
      emails: string[];
    }>(
      `SELECT e.invoice_id, e.type, e.data->>'status' AS status,
              coalesce(array_agg(d.endpoint_id::text ORDER BY d.endpoint_id) FILTER (WHERE d.channel = 'webhook'), '{}') AS endpoints,
              coalesce(array_agg(d.recipient) FILTER (WHERE d.channel = 'email'), '{}') AS emails
       FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
       WHERE e.invoice_id = ANY ($1) AND e.id <> ALL ($2::uuid[])
       GROUP BY e.id, e.organization_id ORDER BY e.invoice_id`,
      [invoices, eventsBefore],
    );
    const sorted = (ids: string[]) => [...ids].sort();
    expect(written).toEqual(
      [
        {
          invoice_id: invoices[0],
          type: 'invoice.stamped',
          status: 'stamped',
          endpoints: sorted([all!, stampedOnly!]),
          emails: ['c1@example.com'],
        },
        {
          invoice_id: invoices[1],
          type: 'invoice.stamped',
          status: 'stamped',
          endpoints: sorted([all!, stampedOnly!]),
          emails: ['c2@example.com'],
        },
        {
          invoice_id: invoices[2],
          type: 'invoice.cancellation_rejected',
          status: 'stamped',
          endpoints: [all],
          emails: [],
        },
      ].sort((a, b) => a.invoice_id!.localeCompare(b.invoice_id!)),
    );
    expect(await rows(`SELECT 1 FROM deliveries WHERE endpoint_id = $1`, [disabled])).toEqual([]);

    // An UPDATE that moves no status writes nothing, and wakes nobody.
    const count = async () => Number((await rows<{ n: string }>(`SELECT count(*) AS n FROM events`))[0]!.n);
    const total = await count();
    expect(
      await notifiesOf(() => t.sql.query(`UPDATE invoices SET updated_at = now() WHERE id = ANY ($1)`, [invoices])),
    ).toBe(0);
    expect(await count()).toBe(total);
  });

  it('an invoice written as needs_data is announced; one written pending is not; a rolled-back change leaves no event', async () => {
    const [payment] = await rows<{ id: string }>(
      `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
       VALUES (timbra_uuid7(), 'rest', 'nd-1', 50.00, 'MXN', now()) RETURNING id`,
    );
    const [needsData, pending] = (
      await rows<{ id: string }>(
        `INSERT INTO invoices (id, organization_id, payment_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml, problems)
         VALUES (timbra_uuid7(), $1, $2, 'I', 'ND', 1, 'MXN', 43.10, 50.00, 'needs_data', 'ND-1', NULL, '[{"path":"receptor.rfc"}]'),
                (timbra_uuid7(), $1, NULL, 'I', 'ND', 2, 'MXN', 43.10, 50.00, 'pending', 'ND-2', '<x/>', NULL)
         RETURNING id`,
        [TEST_EMISOR_ID, payment!.id],
      )
    ).map((r) => r.id);
    const typesOf = async (id: string) =>
      (await rows<{ type: string }>(`SELECT type FROM events WHERE invoice_id = $1 ORDER BY id`, [id])).map(
        (r) => r.type,
      );
    expect(await typesOf(needsData!)).toEqual(['invoice.needs_data']);
    expect(await typesOf(pending!)).toEqual([]);

    await t.sql.query('BEGIN');
    await t.sql.query(`UPDATE invoices SET status = 'stamp_failed' WHERE id = $1`, [pending]);
    await t.sql.query('ROLLBACK');
    expect(await typesOf(pending!)).toEqual([]);
    await t.sql.query(`UPDATE invoices SET status = 'stamp_failed' WHERE id = $1`, [pending]);
    expect(await typesOf(pending!)).toEqual(['invoice.failed']);
  });
});

describe('what the functions run on every payment cost (migrations 20270108000000, 20270109000000)', () => {
  it('each plans its queries once per session, whatever the caller’s plan_cache_mode', async () => {
    // A CREATE OR REPLACE that forgot the SET clause would plan them again at every call: the
    // stamp's UPDATE took 0.51 ms instead of 0.30 in a session on plan_cache_mode = auto.
    const writers = await rows<{ name: string; config: string[] | null }>(
      `SELECT proname AS name, proconfig AS config FROM pg_proc
       WHERE pronamespace = 'public'::regnamespace
         AND proname IN ('timbra_record_events', 'invoices_record_events_inserted', 'invoices_record_events_updated', 'payments_record_events')
       ORDER BY proname`,
    );
    expect(writers).toEqual(
      [
        'invoices_record_events_inserted',
        'invoices_record_events_updated',
        'payments_record_events',
        'timbra_record_events',
      ].map((name) => ({ name, config: ['plan_cache_mode=force_generic_plan'] })),
    );
  });

  it('timbra_uuid7() is inlined where it is called, not parsed and planned in each statement', async () => {
    const plan = (await rows<{ 'QUERY PLAN': string }>(`EXPLAIN (VERBOSE, COSTS OFF) SELECT timbra_uuid7()`))
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).toContain('gen_random_uuid()');
    expect(plan).not.toContain('timbra_uuid7');
  });

  it('timbra_pending_organizations (the relay, at every drain) is PL/pgSQL: its query planned once per session', async () => {
    const [fn] = await rows<{ language: string; definer: boolean }>(
      `SELECT l.lanname AS language, p.prosecdef AS definer FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
       WHERE p.proname = 'timbra_pending_organizations'`,
    );
    expect(fn).toEqual({ language: 'plpgsql', definer: true });
  });

  it('compresses the documents with lz4 (migration 20270110000000), and reads them back', async () => {
    const columns = await rows<{ column: string; compression: string }>(
      `SELECT attrelid::regclass || '.' || attname AS column, attcompression AS compression FROM pg_attribute
       WHERE (attrelid, attname) IN (('invoices'::regclass, 'frozen_xml'), ('invoices'::regclass, 'stamped_xml'),
             ('invoices'::regclass, 'tfd_xml'), ('invoice_versions'::regclass, 'frozen_xml'), ('webhook_events'::regclass, 'payload'))
       ORDER BY 1`,
    );
    expect(columns.every((c) => c.compression === 'l')).toBe(true);
    expect(columns).toHaveLength(5);
    // A document large enough to be compressed comes back byte for byte, compressed by lz4.
    const xml = `<cfdi:Comprobante>${'<cfdi:Concepto Descripcion="Venta" Importe="100.00"/>'.repeat(200)}</cfdi:Comprobante>`;
    await t.sql.query(
      `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
       VALUES (timbra_uuid7(), $1, 'I', 'LZ', 1, 'MXN', 100, 116, 'pending', 'LZ-1', $2)`,
      [TEST_EMISOR_ID, xml],
    );
    const [stored] = await rows<{ method: string; same: boolean }>(
      `SELECT pg_column_compression(frozen_xml) AS method, frozen_xml = $1 AS same FROM invoices WHERE stamp_key = 'LZ-1'`,
      [xml],
    );
    expect(stored).toEqual({ method: 'lz4', same: true });
  });
});
