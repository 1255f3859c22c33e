import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import {
  assertTransition,
  canTransition,
  INITIAL_STATUSES,
  INVOICE_STATUSES,
  InvalidTransitionError,
  statusGuard,
  TRANSITIONS,
  type InvoiceStatus,
} from '../src/invoices/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

describe('invoice state machine (the table)', () => {
  it.each([
    ['waiting', 'pending'],
    ['waiting', 'needs_data'],
    ['needs_data', 'pending'],
    ['pending', 'stamped'],
    ['pending', 'stamp_failed'],
    ['stamp_failed', 'pending'],
    ['stamp_failed', 'stamped'],
    ['stamped', 'cancel_requested'],
    ['cancel_requested', 'cancelled'],
    ['cancel_requested', 'stamped'],
  ] as const)('allows %s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it('refuses every other move, e.g. leaving cancelled or skipping the stamp', () => {
    let count = 0;
    for (const from of INVOICE_STATUSES) for (const to of INVOICE_STATUSES) if (canTransition(from, to)) count++;
    expect(count).toBe(10);
    expect(() => assertTransition('cancelled', 'stamped')).toThrow(InvalidTransitionError);
    expect(() => assertTransition('needs_data', 'stamped')).toThrow(/needs_data to stamped/);
  });

  it('a status write whose guard admits an illegal move is refused where it is declared', () => {
    expect(() => statusGuard(['pending', 'cancelled'], 'stamped')).toThrow(/cancelled to stamped/);
    const guard = statusGuard(['pending', 'stamp_failed'], 'stamped');
    expect(guard.text).toBe('status IN ($1::invoice_status,$2::invoice_status)');
    expect(guard.values).toEqual(['pending', 'stamp_failed']);
  });
});

describe('the database enforces the same state machine', () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(`
      INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion)
      VALUES ('00000000-0000-4000-8000-000000000001', 'EKU9003173C9', 'E', '601', '42501')`);
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it('its transition table is the one in invoice-status.ts', async () => {
    const { rows } = await client.query<{ from_status: InvoiceStatus | null; to_status: InvoiceStatus }>(
      'SELECT from_status::text, to_status::text FROM invoice_status_transitions',
    );
    const inDatabase = rows.map((r) => `${r.from_status ?? '∅'}→${r.to_status}`).sort();
    const inCode = [
      ...INITIAL_STATUSES.map((to) => `∅→${to}`),
      ...INVOICE_STATUSES.flatMap((from) => TRANSITIONS[from].map((to) => `${from}→${to}`)),
    ].sort();
    expect(inDatabase).toEqual(inCode);
  });

  let folio = 0;
  /** An invoice brought to `status` through legal moves only. */
  async function invoiceIn(status: InvoiceStatus): Promise<string> {
    const path: Record<InvoiceStatus, InvoiceStatus[]> = {
      waiting: ['waiting'],
      needs_data: ['needs_data'],
      pending: ['pending'],
      stamped: ['pending', 'stamped'],
      stamp_failed: ['pending', 'stamp_failed'],
      cancel_requested: ['pending', 'stamped', 'cancel_requested'],
      cancelled: ['pending', 'stamped', 'cancel_requested', 'cancelled'],
    };
    const [first, ...rest] = path[status];
    folio++;
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key)
       VALUES (gen_random_uuid(), '00000000-0000-4000-8000-000000000001', 'I', 'A', $1, 'MXN', 1, 1, $2, $3) RETURNING id`,
      [folio, first, `I-state-${folio}`],
    );
    for (const next of rest) await client.query('UPDATE invoices SET status = $1 WHERE id = $2', [next, rows[0]!.id]);
    return rows[0]!.id;
  }

  it('refuses every write of a transition the table does not list, and accepts every one it does', async () => {
    for (const from of INVOICE_STATUSES) {
      for (const to of INVOICE_STATUSES) {
        if (from === to) continue;
        const id = await invoiceIn(from);
        const write = client.query('UPDATE invoices SET status = $1 WHERE id = $2', [to, id]);
        if (canTransition(from, to)) await expect(write).resolves.toMatchObject({ rowCount: 1 });
        else await expect(write).rejects.toThrow(`cannot go from ${from} to ${to}`);
      }
    }
  });

  it('refuses an invoice written in a status it cannot start in', async () => {
    for (const status of INVOICE_STATUSES.filter((s) => !INITIAL_STATUSES.includes(s))) {
      folio++;
      await expect(
        client.query(
          `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key)
           VALUES (gen_random_uuid(), '00000000-0000-4000-8000-000000000001', 'I', 'A', $1, 'MXN', 1, 1, $2, $3)`,
          [folio, status, `I-initial-${folio}`],
        ),
      ).rejects.toThrow(`cannot be written as ${status}`);
    }
  });
});
