import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { listCustomers } from '../src/catalog/index.ts';
import { changeMetadata, metadataWhere, providerMetadata } from '../src/metadata.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

let t: Awaited<ReturnType<typeof databaseWithEmisor>>;
beforeAll(async () => {
  t = await databaseWithEmisor();
  // 1,001 customers share a tier (past the indexed lookup's 1,000 ids), two have another.
  await t.sql.query(
    `INSERT INTO customers (id, organization_id, rfc, nombre, codigo_postal, regimen_fiscal, uso_cfdi, metadata, created_at)
     SELECT timbra_uuid7(), $1, 'XAXX010101000', 'C' || n, '01000', '616', 'S01',
            jsonb_build_object('tier', CASE WHEN n <= 1001 THEN 'gold' ELSE 'silver' END, 'n', n::text),
            now() - make_interval(secs => 2000 - n)
       FROM generate_series(1, 1003) AS n`,
    [TEST_EMISOR_ID],
  );
  await t.sql.query(
    `INSERT INTO customers (id, organization_id, rfc, nombre, codigo_postal, regimen_fiscal, uso_cfdi)
     VALUES (timbra_uuid7(), $1, 'XAXX010101000', 'sin metadata', '01000', '616', 'S01')`,
    [TEST_EMISOR_ID],
  );
});
afterAll(() => t.close());

const page = { limit: 5, cursor: null };

describe('metadata filters', () => {
  it('reads a selective filter by the ids its index finds', async () => {
    const where = await metadataWhere(t.prisma, 'customers', { tier: 'silver' });
    expect(where.id?.in).toHaveLength(2);
    const rows = await listCustomers(t.prisma, { metadata: { tier: 'silver' } }, page);
    expect(rows.map((r) => r.nombre)).toEqual(['C1003', 'C1002']);
  });

  it('checks each row for a filter that matches more than 1,000, with the same answer', async () => {
    const where = await metadataWhere(t.prisma, 'customers', { tier: 'gold' });
    expect(where.id).toBeUndefined();
    const rows = await listCustomers(t.prisma, { metadata: { tier: 'gold' } }, page);
    expect(rows.map((r) => r.nombre)).toEqual(['C1001', 'C1000', 'C999', 'C998', 'C997', 'C996']);
    const both = await listCustomers(t.prisma, { metadata: { tier: 'gold', n: '7' } }, page);
    expect(both.map((r) => r.nombre)).toEqual(['C7']);
  });

  it('matches no row for a key no row has, nor the rows without metadata', async () => {
    expect(await listCustomers(t.prisma, { metadata: { tier: '' } }, page)).toEqual([]);
    expect(await listCustomers(t.prisma, { metadata: { other: 'gold' } }, page)).toEqual([]);
  });
});

describe('metadata changes and shape', () => {
  it('answers not_found for a row the organization does not have', async () => {
    expect(await changeMetadata(t.prisma, 'customers', '00000000-0000-4000-8000-00000000dead', { a: 'b' })).toBe(
      'not_found',
    );
  });

  it('is held by the database to an object of strings', async () => {
    const bad = async (metadata: string) =>
      t.sql.query(
        `INSERT INTO customers (id, organization_id, rfc, nombre, codigo_postal, regimen_fiscal, uso_cfdi, metadata)
         VALUES (timbra_uuid7(), $1, 'XAXX010101000', 'x', '01000', '616', 'S01', $2::jsonb)`,
        [TEST_EMISOR_ID, metadata],
      );
    await expect(bad('{"a": 1}')).rejects.toThrow(/customers_metadata_check/);
    await expect(bad('["a"]')).rejects.toThrow(/customers_metadata_check/);
    await expect(bad('{"a": {"b": "c"}}')).rejects.toThrow(/customers_metadata_check/);
    await expect(bad('{"a": "b"}')).resolves.toBeDefined();
  });

  it("keeps a provider's strings, numbers and booleans as text within the limits, and drops the rest", () => {
    const raw: Record<string, unknown> = {
      order_id: 'A-1',
      qty: 3,
      gift: false,
      nested: { a: 1 },
      none: null,
      blank: '',
      ['k'.repeat(41)]: 'long key',
      long: 'x'.repeat(501),
      'a[b]': 'brackets',
    };
    for (let i = 0; i < 60; i++) raw[`extra${i}`] = 'v';
    const kept = providerMetadata(raw);
    expect(Object.keys(kept)).toHaveLength(50);
    expect(kept).toMatchObject({ order_id: 'A-1', qty: '3', gift: 'false' });
    for (const dropped of ['nested', 'none', 'blank', 'k'.repeat(41), 'long', 'a[b]'])
      expect(kept).not.toHaveProperty([dropped]);
  });
});
