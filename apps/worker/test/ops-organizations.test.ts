/**
 * `npm run ops` on a platform's database, where many organizations live and the owner's session names
 * none: the commands that write do so in the organization's name — the one named with
 * `--organization` (id or RFC; default EMISOR_RFC's), or the one the row they act on belongs to.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { deadLetterOutboxRow } from '@timbra/db/outbox';
import { OrganizationClients } from '@timbra/db/organizations';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { opsHere, pendingInvoiceOf, type TestOrganization } from './helpers.ts';

const HOME: TestOrganization = {
  id: randomUUID(),
  rfc: 'EKU9003173C9',
  nombre: 'ESCUELA KEMPER URGATE',
  regimenFiscal: '601',
  cp: '42501',
};
const OTHER: TestOrganization = {
  id: randomUUID(),
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  cp: '36257',
};

let db: TestDatabase;
let clients: OrganizationClients;
beforeAll(async () => {
  db = await createTestDatabase();
  const owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  for (const o of [HOME, OTHER])
    await owner.query(
      'INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, $3, $4, $5)',
      [o.id, o.rfc, o.nombre, o.regimenFiscal, o.cp],
    );
  await owner.end();
  clients = new OrganizationClients(db.url, { poolSize: 2 });
});
afterAll(async () => {
  await clients.close();
  await db.drop();
});

const ops = (args: string[]) => opsHere(db.url, [...args, '--json'], { EMISOR_RFC: HOME.rfc });
const keyNames = async (organizationId: string) =>
  (await clients.for(organizationId).apiClient.findMany({ select: { name: true } })).map((k) => k.name).sort();

describe('npm run ops with several organizations', () => {
  it("makes, lists and revokes keys in the organization named, EMISOR_RFC's by default", async () => {
    expect((await ops(['keys:create', 'till'])).status).toBe(0);
    expect((await ops(['keys:create', 'till', '--organization', OTHER.rfc])).status).toBe(0);
    expect((await ops(['keys:create', 'backoffice', '--organization', OTHER.id])).status).toBe(0);
    expect(await keyNames(HOME.id)).toEqual(['till']);
    expect(await keyNames(OTHER.id)).toEqual(['backoffice', 'till']);

    const listed = await ops(['keys:list', '--organization', OTHER.rfc]);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((k) => k.name).sort()).toEqual(['backoffice', 'till']);
    expect((await ops(['keys:revoke', 'till', '--organization', OTHER.rfc])).status).toBe(0);
    const revoked = await clients.for(OTHER.id).apiClient.findMany({ where: { revokedAt: { not: null } } });
    expect(revoked.map((k) => k.name)).toEqual(['till']);
    expect(await clients.for(HOME.id).apiClient.count({ where: { revokedAt: { not: null } } })).toBe(0);

    const unknown = await ops(['keys:list', '--organization', 'AAA010101AAA']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/no organization AAA010101AAA/);
  });

  it("re-drives another organization's dead letter in its name", async () => {
    const prisma = clients.for(OTHER.id);
    const invoiceId = await pendingInvoiceOf(prisma, OTHER);
    const outbox = await prisma.outboxRow.findFirstOrThrow({ where: { invoiceId } });
    await deadLetterOutboxRow(prisma, { outboxId: outbox.id, invoiceId }, 'PAC down for too long');

    const retried = await ops(['dlq:retry', outbox.id, '--reason', 'the PAC is back']);
    expect([retried.status, retried.stderr]).toEqual([0, '']);
    expect(JSON.parse(retried.stdout)).toEqual([expect.objectContaining({ id: outbox.id, ok: true })]);
    // Recorded in its organization's history, and the row pending again.
    const redrives = await prisma.outboxRedrive.findMany({ where: { outboxId: outbox.id } });
    expect(redrives).toEqual([expect.objectContaining({ reason: 'the PAC is back' })]);
    expect((await prisma.outboxRow.findUniqueOrThrow({ where: { id: outbox.id } })).status).toBe('pending');
    expect(await clients.for(HOME.id).outboxRedrive.count()).toBe(0);
  });

  it('an RFC names the live organization, never its test twin; the twin is named by its id', async () => {
    const twin = randomUUID();
    const owner = new pg.Client({ connectionString: db.url });
    await owner.connect();
    await owner.query(
      `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion, mode, live_id)
       VALUES ($1, $2, $3, $4, $5, 'test', $6)`,
      [twin, HOME.rfc, HOME.nombre, HOME.regimenFiscal, HOME.cp, HOME.id],
    );
    await owner.end();
    expect((await ops(['keys:create', 'night', '--organization', HOME.rfc.toLowerCase()])).status).toBe(0);
    expect((await ops(['keys:create', 'evening'])).status).toBe(0); // EMISOR_RFC's
    expect((await ops(['keys:create', 'lab', '--organization', twin])).status).toBe(0);
    expect(await keyNames(HOME.id)).toEqual(expect.arrayContaining(['evening', 'night']));
    expect(await keyNames(twin)).toEqual(['lab']);
  });
});
