/**
 * Reconciliation against the SAT's own record (`npm run ops -- reconcile --source sat`), with the
 * PAC sandbox as a real process serving Descarga Masiva and a test e.firma issued by the tests' CA:
 * each planted case is found, adopted or reported, and the run is recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { persistStamp } from '@timbra/db/outbox';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import {
  certificateVariant,
  freezeSample,
  testCaFile,
  testCsdPaths,
  testCsdFiles,
  testEfirmaFor,
} from '@timbra/test-support';
import { stampedXmlOf } from '@timbra/cfdi-core';
import { LocalKeyVault, sealEfirma } from '@timbra/cfdi-node';
import { storeEfirma } from '@timbra/db/csds';
import { finishSatReconciliation, SatReconciliationRunning, startSatReconciliation } from '@timbra/db/invoices';
import { EfirmaUnavailable, efirmaOf } from '../src/operations/sat-efirma.ts';
import { Registry } from 'prom-client';
import { pino } from 'pino';
import type { EachOrganization } from '../src/organizations/across.ts';
import type { SatFinding } from '../src/operations/sat-findings.ts';
import { satPass, satRecordMetrics } from '../src/operations/sat-schedule.ts';
import { opsHere, pendingInvoice, startSandboxProcess, swClients, testEmisor, type SandboxProcess } from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let efirmaDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
  sandbox = await startSandboxProcess();
  efirmaDir = mkdtempSync(join(tmpdir(), 'timbra-efirma-'));
  const efirma = testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE');
  writeFileSync(join(efirmaDir, 'EKU9003173C9.cer'), efirma.cer);
  writeFileSync(join(efirmaDir, 'EKU9003173C9.key'), efirma.key);
  writeFileSync(join(efirmaDir, 'EKU9003173C9.password'), `${efirma.password}\n`);
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await db.drop();
});

const reconcile = () =>
  opsHere(db.url, ['reconcile', '--source', 'sat', '--since', '1d', '--json'], {
    EFIRMA_DIR: efirmaDir,
    SAT_DESCARGA_URL: sandbox.primary,
    SAT_LAG_MS: '0',
    SAT_POLL_MS: '100',
    EMISOR_RFC: 'EKU9003173C9',
  });

/** An invoice stamped at `pac` and recorded as stamped, as the worker does. */
async function stampedInvoice(tag: string, pac: 0 | 1 = 0) {
  const invoice = await pendingInvoice(prisma, tag);
  const result = await swClients(sandbox)[pac]!.stamp(invoice.frozenXml, { idempotencyKey: invoice.stampKey });
  await persistStamp(
    prisma,
    { outboxId: invoice.outboxId, invoiceId: invoice.invoiceId, version: 1 },
    { uuid: result.uuid, tfdXml: result.tfdXml, pac: result.pac },
    [],
  );
  return { ...invoice, uuid: result.uuid.toUpperCase() };
}

/** The sweeper's pass over one organization (its own client), with the schedule's test settings. */
function sweeperFor(id: string, own: PrismaClient, extra: { EFIRMA_DIR?: string } = {}) {
  const registry = new Registry();
  const each: EachOrganization = async (_what, duty) => ({
    results: [await duty({ organizationId: id, prisma: own, csd: undefined })],
    failed: 0,
  });
  const settings = {
    ...extra,
    SAT_DESCARGA_URL: sandbox.primary,
    SAT_LAG_MS: 0,
    SAT_POLL_MS: 100,
    SAT_WAIT_MAX_MS: 60_000,
    SAT_RECONCILE_EVERY_MS: 3_600_000,
    SAT_RECONCILE_DAYS: 1,
  };
  return { registry, deps: { each, settings, metrics: satRecordMetrics(registry), logger: pino({ level: 'silent' }) } };
}

describe('reconcile --source sat', () => {
  it('adopts a timbre whose answer was lost, and reports each case a person must see', async () => {
    const [primary, backup] = swClients(sandbox);
    const kept = await stampedInvoice('kept');
    // A stamp whose answer was lost and never retried: the PAC stamped it, the invoice waits.
    const lost = await pendingInvoice(prisma, 'lost');
    const lostStamp = await primary!.stamp(lost.frozenXml, { idempotencyKey: lost.stampKey });
    // Stamped here by the primary, then the same bytes by the backup PAC: a second CFDI for one sale.
    const twice = await stampedInvoice('twice');
    const second = await backup!.stamp(twice.frozenXml, { idempotencyKey: twice.stampKey });
    // Cancelled at the PAC behind Timbra's back.
    const outside = await stampedInvoice('outside');
    await primary!.cancel({
      uuid: outside.uuid,
      rfcEmisor: 'EKU9003173C9',
      motivo: '02',
      csd: testCsdFiles('EKU9003173C9'),
    });
    // A CFDI of this RFC that no invoice of Timbra's is.
    const stranger = freezeSample({ sourceId: `stranger-${Date.now()}`, serie: 'ZZ', folio: '9' });
    const strangerStamp = await primary!.stamp(stranger.xml, { idempotencyKey: stranger.stampKey });
    // Recorded as stamped here, never at a PAC: the SAT does not know it.
    const ghost = await pendingInvoice(prisma, 'ghost');
    const ghostUuid = '11111111-2222-4333-8444-555555555555';
    await persistStamp(
      prisma,
      { outboxId: ghost.outboxId, invoiceId: ghost.invoiceId, version: 1 },
      { uuid: ghostUuid, tfdXml: '<tfd/>', pac: 'primary' },
      [],
    );

    const first = await reconcile();
    expect(first.stderr).not.toMatch(/\n\s+at /);
    expect(first.status).toBe(1);
    const report = JSON.parse(first.stdout) as { sat: number; matched: number; findings: SatFinding[] };
    const by = (kind: SatFinding['kind']) => report.findings.filter((f) => f.kind === kind);
    expect(report.sat).toBe(6);
    expect(by('adopted')).toEqual([
      expect.objectContaining({ uuid: lostStamp.uuid.toUpperCase(), invoiceId: lost.invoiceId }),
    ]);
    const orphans = by('orphan').map((f) => f.kind === 'orphan' && [f.uuid, f.reason, f.invoiceUuid]);
    expect(orphans).toEqual(
      expect.arrayContaining([
        [second.uuid.toUpperCase(), 'stamped_twice', twice.uuid],
        [strangerStamp.uuid.toUpperCase(), 'no_invoice', undefined],
      ]),
    );
    expect(orphans).toHaveLength(2);
    expect(by('missing')).toEqual([
      expect.objectContaining({ uuid: ghostUuid.toUpperCase(), invoiceId: ghost.invoiceId }),
    ]);
    expect(by('cancelled_at_sat')).toEqual([
      expect.objectContaining({ uuid: outside.uuid, cancellationUnderWay: false }),
    ]);
    expect(by('total_differs').concat(by('receptor_differs'), by('vigente_at_sat'))).toEqual([]);
    expect(report.matched).toBe(3);

    // Adopted: the invoice holds the SAT's CFDI, byte for byte what the PAC stamped (its frozen bytes
    // and the TFD, not stored twice); its outbox row is done.
    const adopted = await prisma.invoice.findUniqueOrThrow({ where: { id: lost.invoiceId } });
    expect(adopted).toMatchObject({ status: 'stamped', uuid: lostStamp.uuid.toUpperCase(), stampedXml: null });
    expect(stampedXmlOf(adopted)).toBe(lostStamp.stampedXml);
    expect((await prisma.outboxRow.findFirstOrThrow({ where: { invoiceId: lost.invoiceId } })).status).toBe('done');
    expect(kept.uuid).toBeTruthy();

    // The run is recorded; a second run asks nothing twice and finds the adopted one matched.
    const runs = await prisma.satReconciliation.findMany();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ runBy: 'ops', satCount: 6, error: null });
    const again = await reconcile();
    expect(again.status).toBe(1);
    const secondReport = JSON.parse(again.stdout) as { matched: number; findings: SatFinding[] };
    expect(secondReport.matched).toBe(4);
    expect(secondReport.findings.filter((f) => f.kind === 'adopted')).toEqual([]);
    expect(secondReport.findings.filter((f) => f.kind === 'orphan')).toHaveLength(2);
  });

  it("the sweeper's schedule: a run when due, recorded; its gauges from the latest run; none again before its time", async () => {
    const { id } = await testEmisor(prisma);
    const own = createPrisma(db.url, { poolSize: 1, organization: id });
    const { registry, deps } = sweeperFor(id, own, { EFIRMA_DIR: efirmaDir });
    try {
      const before = await own.satReconciliation.count();
      // The ops runs above were just now: not due yet; the gauges show the latest.
      await satPass(deps);
      expect(await own.satReconciliation.count()).toBe(before);
      const series = async () =>
        (await registry.getMetricsAsJSON()).find((m) => m.name === 'timbra_sat_findings')!.values;
      expect((await series()).find((v) => v.labels.kind === 'missing')?.value).toBe(1);
      // An hour on, it is due: the worker runs one and records it.
      await satPass({ ...deps, now: () => new Date(Date.now() + 3_600_000) });
      const runs = await own.satReconciliation.findMany({ orderBy: { startedAt: 'desc' } });
      expect(runs).toHaveLength(before + 1);
      expect(runs[0]).toMatchObject({ runBy: 'worker', error: null });
      expect((await series()).find((v) => v.labels.kind === 'orphan')?.value).toBe(2);
      const last = (await registry.getMetricsAsJSON()).find(
        (m) => m.name === 'timbra_sat_reconcile_last_success_timestamp_seconds',
      )!.values[0]!;
      expect(last.value).toBeGreaterThan(Date.now() / 1000 - 60);
    } finally {
      await own.$disconnect();
    }
  });

  it('runs one reconciliation an organization at a time; one a dead process left is closed after its longest wait', async () => {
    const { id } = await testEmisor(prisma);
    const own = createPrisma(db.url, { poolSize: 1, organization: id });
    try {
      const run = { periodFrom: '2026-12-05 00:00:00', periodTo: '2026-12-06 00:00:00', runBy: 'worker' };
      const first = await startSatReconciliation(own, run, 60_000);
      await expect(startSatReconciliation(own, run, 60_000)).rejects.toBeInstanceOf(SatReconciliationRunning);
      // An operator asking meanwhile is told, and nothing is asked of the SAT or recorded.
      const before = await own.satReconciliation.count();
      const busy = await opsHere(db.url, ['reconcile', '--source', 'sat', '--since', '1d'], {
        EFIRMA_DIR: efirmaDir,
        SAT_DESCARGA_URL: sandbox.primary,
        EMISOR_RFC: 'EKU9003173C9',
      });
      expect([busy.status, busy.stderr]).toEqual([3, expect.stringMatching(/EKU9003173C9: .*already running \(since/)]);
      expect(await own.satReconciliation.count()).toBe(before);
      // Past its longest wait (0 here) the unfinished one is closed as abandoned, and the next starts.
      const second = await startSatReconciliation(own, run, 0);
      const rows = await own.satReconciliation.findMany({ where: { id: { in: [first, second] } } });
      expect(rows.find((r) => r.id === first)).toMatchObject({ error: expect.stringMatching(/^abandoned/) });
      expect(rows.find((r) => r.id === second)?.finishedAt).toBeNull();
      await finishSatReconciliation(own, second, { error: 'closed by the test' });
    } finally {
      await own.$disconnect();
    }
  });

  it('cannot check without an e.firma: exit 3, saying which file', async () => {
    const run = await opsHere(db.url, ['reconcile', '--source', 'sat'], {
      EFIRMA_DIR: mkdtempSync(join(tmpdir(), 'timbra-no-efirma-')),
      SAT_DESCARGA_URL: sandbox.primary,
      EMISOR_RFC: 'EKU9003173C9',
    });
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(/no e\.firma of EKU9003173C9/);
  });

  it('signs with the e.firma stored by efirma:upload, sealed under VAULT_KEYS, and never with a CSD', async () => {
    const efirma = testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE');
    const dir = mkdtempSync(join(tmpdir(), 'timbra-efirma-upload-'));
    const file = (name: string, bytes: Buffer | string) => {
      writeFileSync(join(dir, name), bytes);
      return join(dir, name);
    };
    const vaultKeys = file('master.keys', `2026-12:${randomBytes(32).toString('base64')}\n`);
    const upload = (cer: string, key: string, passwordFile: string) =>
      opsHere(
        db.url,
        ['efirma:upload', '--cer', cer, '--key', key, '--password-file', passwordFile, '--trusted-cas', testCaFile()],
        { VAULT_KEYS_FILE: vaultKeys, EMISOR_RFC: 'EKU9003173C9' },
      );
    // A CSD handed over as the e.firma is refused, and nothing is stored.
    const csd = testCsdPaths('EKU9003173C9');
    const refused = await upload(csd.cer, csd.key, csd.passwordFile);
    expect([refused.status, refused.stderr]).toEqual([1, expect.stringMatching(/EFIRMA_IS_CSD/)]);
    expect(await prisma.efirma.count()).toBe(0);

    const stored = await upload(file('e.cer', efirma.cer), file('e.key', efirma.key), file('e.pw', efirma.password));
    expect(stored.stderr).toBe('');
    expect(stored.status).toBe(0);
    const row = await prisma.efirma.findFirstOrThrow();
    expect([row.noCertificado, row.chain]).toEqual([efirma.noCertificado, 'verified']);
    expect(JSON.stringify(row.sealed)).not.toContain(efirma.password);
    const listed = await opsHere(db.url, ['efirma:list'], { EMISOR_RFC: 'EKU9003173C9' });
    expect(listed.stdout).toMatch(new RegExp(`${efirma.noCertificado}\\s+IN USE`));

    // No EFIRMA_DIR: the stored one asks the SAT, and the run finds what the first one found.
    const env = { SAT_DESCARGA_URL: sandbox.primary, SAT_LAG_MS: '0', SAT_POLL_MS: '100', EMISOR_RFC: 'EKU9003173C9' };
    const run = await opsHere(db.url, ['reconcile', '--source', 'sat', '--since', '1d', '--json'], {
      ...env,
      VAULT_KEYS_FILE: vaultKeys,
    });
    expect(run.stderr).toMatch(/with the stored e\.firma/);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout) as { findings: SatFinding[]; matched: number };
    expect(report.findings.filter((f) => f.kind === 'orphan')).toHaveLength(2);
    // Under another master key it does not open: exit 3, and no secret in what is said.
    const other = file('other.keys', `2026-12:${randomBytes(32).toString('base64')}\n`);
    const closed = await opsHere(db.url, ['reconcile', '--source', 'sat'], { ...env, VAULT_KEYS_FILE: other });
    expect(closed.status).toBe(3);
    expect(closed.stderr).toMatch(/e\.firma of EKU9003173C9 cannot be used/);
    expect(closed.stderr).not.toContain(efirma.password);
  });

  it('says so, loudly, when the only e.firma stored has expired: no silent end to the reconciliation', async () => {
    const vault = LocalKeyVault.fromFile(`2026-12:${randomBytes(32).toString('base64')}`);
    const { id } = await prisma.emisor.create({
      data: { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' },
    });
    const efirma = testEfirmaFor('CACX7605101P8', 'XOCHILT CASAS CHAVEZ');
    const ended = new Date(Date.now() - 86_400_000);
    const expired = { ...efirma, cer: certificateVariant(efirma.cer, { notAfter: ended }) };
    const own = createPrisma(db.url, { poolSize: 1, organization: id });
    try {
      await storeEfirma(
        own,
        await sealEfirma(expired, { id, rfc: 'CACX7605101P8' }, { vault, at: new Date(+ended - 60_000) }),
      );
      await expect(efirmaOf(own, { id, rfc: 'CACX7605101P8' }, { vault })).rejects.toThrow(EfirmaUnavailable);
      await expect(efirmaOf(own, { id, rfc: 'CACX7605101P8' }, { vault })).rejects.toThrow(
        /not now: upload its renewal/,
      );
      const { registry, deps } = sweeperFor(id, own);
      await satPass({ ...deps, vault });
      const metric = async (name: string) =>
        (await registry.getMetricsAsJSON())
          .find((m) => m.name === name)!
          .values.find((v) => v.labels.organization === id)?.value;
      expect(await metric('timbra_sat_reconcile_failures_total')).toBe(1);
      // Never reconciled: the last success is 0, which the stale alert reads.
      expect(await metric('timbra_sat_reconcile_last_success_timestamp_seconds')).toBe(0);
      expect(await own.satReconciliation.count()).toBe(0);
    } finally {
      await own.$disconnect();
    }
  });
});
