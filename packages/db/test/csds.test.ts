import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrisma, type PrismaClient } from '../src/index.ts';
import { OrganizationClients } from '../src/organizations/index.ts';
import {
  CsdAlreadyStored,
  EfirmaAlreadyStored,
  activeCsd,
  chooseActive,
  csdToWatch,
  currentEfirma,
  efirmaToWatch,
  efirmasToWatch,
  listCsds,
  listEfirmas,
  storeCsd,
  storeEfirma,
} from '../src/csds/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let organizationId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 2 });
  organizationId = (
    await prisma.emisor.create({
      data: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    })
  ).id;
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

const day = 86_400_000;
const t0 = new Date('2026-12-04T12:00:00Z');
const at = (days: number) => new Date(t0.getTime() + days * day);
const csd = (noCertificado: string, validFrom: Date, validTo: Date, activeFrom: Date) => ({
  organizationId,
  noCertificado,
  rfc: 'EKU9003173C9',
  validFrom,
  validTo,
  certificate: Buffer.from(`certificate ${noCertificado}`),
  sealed: { v: 1, keyId: 'k', ciphertext: 'c' },
  chain: 'verified' as const,
  activeFrom,
});

describe('which CSD seals (chooseActive)', () => {
  const old = { validFrom: at(-400), validTo: at(30), activeFrom: at(-400) };
  const renewed = { validFrom: at(-1), validTo: at(1400), activeFrom: at(2) };

  it('is the old one until the renewed one’s activeFrom, then the renewed one', () => {
    expect(chooseActive([old, renewed], at(0))).toBe(old);
    expect(chooseActive([old, renewed], at(2))).toBe(renewed);
    expect(chooseActive([renewed, old], at(10))).toBe(renewed);
  });

  it('is never an expired or not-yet-valid CSD, even the newest activated', () => {
    expect(chooseActive([old], at(30))).toBeUndefined();
    const early = { validFrom: at(5), validTo: at(900), activeFrom: at(0) };
    expect(chooseActive([old, early], at(1))).toBe(old);
    const expiredNewest = { validFrom: at(-900), validTo: at(-1), activeFrom: at(-2) };
    expect(chooseActive([old, expiredNewest], at(0))).toBe(old);
  });
});

describe('which CSD the expiry alerts watch (csdToWatch)', () => {
  const old = { validFrom: at(-400), validTo: at(30), activeFrom: at(-400) };
  const older = { validFrom: at(-900), validTo: at(-300), activeFrom: at(-900) };

  it('is the one sealing while one seals, else the one that ended last', () => {
    expect(csdToWatch([older, old], at(0))).toBe(old);
    expect(csdToWatch([older, old], at(31))).toBe(old);
    expect(csdToWatch([old, older], at(31))).toBe(old);
    expect(csdToWatch([], at(0))).toBeUndefined();
  });
});

describe('which e.firma the expiry alerts watch (efirmaToWatch)', () => {
  const used = { validFrom: at(-400), validTo: at(30), uploadedAt: at(-400) };
  const ended = { validFrom: at(-900), validTo: at(-300), uploadedAt: at(-900) };

  it('is the one in use while one is, else the one that ended last', () => {
    expect(efirmaToWatch([ended, used], at(0))).toBe(used);
    expect(efirmaToWatch([ended, used], at(31))).toBe(used);
    expect(efirmaToWatch([used, ended], at(31))).toBe(used);
    expect(efirmaToWatch([], at(0))).toBeUndefined();
  });
});

describe('the CSD store', () => {
  it('stores, lists without the sealed bytes, and answers the one that seals at a moment', async () => {
    await storeCsd(prisma, csd('30001000000500003416', at(-400), at(30), at(-400)));
    await storeCsd(prisma, csd('30001000000500009999', at(-1), at(1400), at(2)));

    expect((await activeCsd(prisma, organizationId, at(0)))?.noCertificado).toBe('30001000000500003416');
    const later = await activeCsd(prisma, organizationId, at(3));
    expect(later?.noCertificado).toBe('30001000000500009999');
    expect(Buffer.from(later!.certificate).toString()).toBe('certificate 30001000000500009999');
    expect(later?.sealed).toEqual({ v: 1, keyId: 'k', ciphertext: 'c' });
    expect(await activeCsd(prisma, organizationId, at(1500))).toBeUndefined();

    const listed = await listCsds(prisma, organizationId, at(0));
    expect(listed.map((c) => [c.noCertificado, c.active])).toEqual([
      ['30001000000500009999', false],
      ['30001000000500003416', true],
    ]);
    expect(listed[0]).not.toHaveProperty('sealed');
    expect(listed[0]).not.toHaveProperty('certificate');
  });

  it('refuses the same NoCertificado twice for an emisor', async () => {
    await expect(storeCsd(prisma, csd('30001000000500003416', at(-400), at(30), at(0)))).rejects.toBeInstanceOf(
      CsdAlreadyStored,
    );
  });

  it('sees nothing of another emisor', async () => {
    const other = await prisma.emisor.create({
      data: { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' },
    });
    expect(await activeCsd(prisma, other.id, at(0))).toBeUndefined();
    expect(await listCsds(prisma, other.id, at(0))).toEqual([]);
  });

  it('refuses a row the database’s checks reject: a NoCertificado that is not 20 digits', async () => {
    await expect(storeCsd(prisma, csd('3000', at(-1), at(10), at(0)))).rejects.toThrow(/no_certificado/);
  });
});

describe('the e.firma store', () => {
  const efirma = (noCertificado: string, validFrom: Date, validTo: Date) => {
    const { activeFrom: _activeFrom, ...row } = csd(noCertificado, validFrom, validTo, validFrom);
    return row;
  };

  it('answers the newest uploaded valid at a moment, and lists without the sealed bytes', async () => {
    expect(await currentEfirma(prisma, organizationId, at(0))).toBeUndefined();
    await storeEfirma(prisma, efirma('00001000000700000001', at(-400), at(30)));
    // Uploaded later, valid from tomorrow: the old one until then.
    await storeEfirma(prisma, efirma('00001000000700000002', at(1), at(1400)));
    expect((await currentEfirma(prisma, organizationId, at(0)))?.noCertificado).toBe('00001000000700000001');
    const renewed = await currentEfirma(prisma, organizationId, at(2));
    expect([renewed?.noCertificado, renewed?.sealed]).toEqual([
      '00001000000700000002',
      { v: 1, keyId: 'k', ciphertext: 'c' },
    ]);
    expect(await currentEfirma(prisma, organizationId, at(1500))).toBeUndefined();
    const listed = await listEfirmas(prisma, organizationId, at(0));
    expect(listed.map((e) => [e.noCertificado, e.current])).toEqual([
      ['00001000000700000002', false],
      ['00001000000700000001', true],
    ]);
    expect(listed[0]).not.toHaveProperty('sealed');
    // The CSDs are another table: an e.firma never seals.
    expect((await listCsds(prisma, organizationId, at(0))).map((c) => c.noCertificado)).not.toContain(
      '00001000000700000001',
    );
  });

  it('answers every organization’s e.firma to watch to a session naming none, which reads no e.firma row', async () => {
    const clients = new OrganizationClients(db.url, { poolSize: 1 });
    try {
      // Stored above: …0001 in use until day 30, …0002 from day 1 to day 1400.
      const watched = await efirmasToWatch(clients.unscoped, at(0));
      expect(watched).toEqual([
        { organizationId, rfc: 'EKU9003173C9', noCertificado: '00001000000700000001', validTo: at(30) },
      ]);
      expect((await efirmasToWatch(clients.unscoped, at(1500)))[0]?.noCertificado).toBe('00001000000700000002');
      // The facts come through timbra_efirma_validity only: the table itself shows this session nothing.
      expect(await clients.unscoped.$queryRaw`SELECT count(*)::int AS n FROM efirmas`).toEqual([{ n: 0 }]);
    } finally {
      await clients.close();
    }
  });

  it('refuses the same e.firma twice for an organization', async () => {
    await expect(storeEfirma(prisma, efirma('00001000000700000001', at(-400), at(30)))).rejects.toBeInstanceOf(
      EfirmaAlreadyStored,
    );
  });
});
