import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrisma, type PrismaClient } from '../src/index.ts';
import { emisorByRfc, ensureEmisor, ensureSeries, takeFolio } from '../src/invoices/folios.ts';
import { ensureTestTwin, organizationById, ownInvoicing, testTwinOf } from '../src/organizations/index.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

// Test and live (migration 20261230000000): a live organization's test twin, an organization of its
// own with the same facts. An RFC names one live organization and has at most one twin.

let db: Awaited<ReturnType<typeof databaseWithEmisor>>;
let owner: PrismaClient;
const SERIES = [
  { serie: 'A', kind: 'I' },
  { serie: 'NC', kind: 'E' },
  { serie: 'P', kind: 'P' },
] as const;

beforeAll(async () => {
  db = await databaseWithEmisor();
  owner = createPrisma(db.db.url, { poolSize: 4 });
});
afterAll(async () => {
  await owner.$disconnect();
  await db.close();
});

describe('test twins', () => {
  it('are made once, even asked for twice at once, with the live facts and series of their own', async () => {
    const [one, two] = await Promise.all([
      ensureTestTwin(owner, TEST_EMISOR_ID, SERIES),
      ensureTestTwin(owner, TEST_EMISOR_ID, SERIES),
    ]);
    expect(one!.organization.id).toBe(two!.organization.id);
    expect([one!.created, two!.created].sort()).toEqual([false, true]);
    const twin = one!.organization;
    expect(twin).toMatchObject({ rfc: 'EKU9003173C9', nombre: 'E', mode: 'test', liveId: TEST_EMISOR_ID });
    expect((await testTwinOf(owner, TEST_EMISOR_ID))?.id).toBe(twin.id);
    // A twin has no twin; an organization that does not exist has none.
    expect(await ensureTestTwin(owner, twin.id, SERIES)).toBeUndefined();
    expect(await ensureTestTwin(owner, '00000000-0000-4000-8000-00000000dead', SERIES)).toBeUndefined();

    // Folios apart: the twin's first sale is its A-1, the live organization's counter untouched.
    await ensureSeries(owner, TEST_EMISOR_ID, SERIES);
    const folios = await owner.$transaction(async (tx) => [
      await takeFolio(tx, twin.id, 'A'),
      await takeFolio(tx, twin.id, 'A'),
      await takeFolio(tx, TEST_EMISOR_ID, 'A'),
    ]);
    expect(folios).toEqual([1, 2, 1]);
  });

  it('share their RFC with their live organization alone, and its facts as the configuration changes them', async () => {
    const twin = (await testTwinOf(owner, TEST_EMISOR_ID))!;
    // The RFC finds the live organization; a second live one for it is refused by the database.
    expect((await emisorByRfc(owner, 'EKU9003173C9'))?.id).toBe(TEST_EMISOR_ID);
    await expect(
      owner.emisor.create({
        data: { rfc: 'EKU9003173C9', nombre: 'X', regimenFiscal: '601', lugarExpedicion: '42501' },
      }),
    ).rejects.toThrow(/Unique constraint/);
    // A second twin, or a twin that says it is live, neither.
    await expect(
      owner.emisor.create({
        data: {
          rfc: 'EKU9003173C9',
          nombre: 'E',
          regimenFiscal: '601',
          lugarExpedicion: '42501',
          mode: 'test',
          liveId: TEST_EMISOR_ID,
        },
      }),
    ).rejects.toThrow(/Unique constraint/);
    await expect(
      owner.emisor.create({
        data: { rfc: 'EKU9003173C9', nombre: 'E', regimenFiscal: '601', lugarExpedicion: '42501', mode: 'test' },
      }),
    ).rejects.toThrow(/emisores_twin_check/);

    // EMISOR_* changed at the API's start: the live row and its twin follow.
    const id = await ensureEmisor(owner, {
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      regimenFiscal: '601',
      lugarExpedicion: '42501',
    });
    expect(id).toBe(TEST_EMISOR_ID);
    expect((await organizationById(owner, twin.id))?.nombre).toBe('ESCUELA KEMPER URGATE');
  });

  it("invoice with their live organization's settings, and its logo unless they have their own", async () => {
    const twin = (await testTwinOf(owner, TEST_EMISOR_ID))!;
    const logo = Buffer.from('live logo');
    await owner.emisor.update({
      where: { id: TEST_EMISOR_ID },
      data: { settings: { series: { ingreso: 'L' } }, logo: new Uint8Array(logo) },
    });
    // Each organization's own client, as the apps open them.
    const clients = new Map<string, PrismaClient>();
    const clientOf = (id: string) => {
      if (!clients.has(id)) clients.set(id, createPrisma(db.db.url, { poolSize: 1, organization: id }));
      return clients.get(id)!;
    };
    try {
      expect(await ownInvoicing(clientOf, twin.id)).toEqual({ settings: { series: { ingreso: 'L' } }, logo });
      await owner.emisor.update({ where: { id: twin.id }, data: { logo: new Uint8Array(Buffer.from('twin logo')) } });
      expect((await ownInvoicing(clientOf, twin.id)).logo).toEqual(Buffer.from('twin logo'));
      expect((await ownInvoicing(clientOf, TEST_EMISOR_ID)).logo).toEqual(logo);
    } finally {
      await Promise.all([...clients.values()].map((c) => c.$disconnect()));
    }
  });
});
