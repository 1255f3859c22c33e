/**
 * The chaos run's last word: each organization's invoices against the SAT's own record, as
 * production checks them — `npm run ops -- reconcile --source sat` (the real CLI, its own process)
 * asking the sandbox's Descarga Masiva with a test e.firma per organization (issued by the tests'
 * CA, which the sandbox trusts). Nothing may be adopted there: every stamp's answer was recorded.
 * Before it, `plantOrphan` makes the one case production fears — a stamp whose answer was dropped and
 * never retried — and `adoptionFigure` shows the reconciliation finding and adopting it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SwClient } from '@timbra/cfdi-node';
import { createPrisma } from '@timbra/db';
import { testEfirmaFor, tsEntryArgs } from '@timbra/test-support';
import { ROOT } from '../lib/processes.ts';
import type { ChaosOrganization, Figure } from './organizations.ts';

interface Finding {
  kind: string;
  reason?: string;
  uuid: string;
  invoiceId?: string;
}
interface Reconciled {
  sat: number;
  ours: number;
  matched: number;
  findings: Finding[];
}

/** One organization's reconciliation through the ops CLI; the report, or why there is none. */
function reconcile(
  organization: ChaosOrganization,
  env: Record<string, string>,
): Promise<{ status: number; report?: Reconciled; stderr: string }> {
  const args = [
    ...tsEntryArgs(join(ROOT, 'apps/worker/src/ops/ops-cli.ts')),
    'reconcile',
    '--source',
    'sat',
    '--since',
    '7d',
    '--organization',
    organization.id,
    '--json',
  ];
  return new Promise((done) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, NODE_OPTIONS: '', ...env }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const status = error ? Number(error.code ?? -1) : 0;
        let report: Reconciled | undefined;
        try {
          report = JSON.parse(stdout) as Reconciled;
        } catch {
          report = undefined;
        }
        done({ status, ...(report ? { report } : {}), stderr });
      },
    );
  });
}

/** The ops CLI's settings: a test e.firma per organization (issued by the tests' CA) in EFIRMA_DIR. */
function reconcileEnv(options: {
  organizations: readonly ChaosOrganization[];
  databaseUrl: string;
  descargaUrl: string;
}): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-chaos-efirma-'));
  for (const organization of options.organizations) {
    const efirma = testEfirmaFor(organization.rfc, organization.rfc);
    writeFileSync(join(dir, `${organization.rfc}.cer`), efirma.cer);
    writeFileSync(join(dir, `${organization.rfc}.key`), efirma.key);
    writeFileSync(join(dir, `${organization.rfc}.password`), efirma.password);
  }
  return {
    DATABASE_URL: options.databaseUrl,
    EFIRMA_DIR: dir,
    SAT_DESCARGA_URL: options.descargaUrl,
    // The sandbox's SAT lists a stamp at once (SANDBOX_SAT_LAG_MS 0): nothing may be missing.
    SAT_LAG_MS: '0',
    SAT_POLL_MS: '200',
  };
}

export interface PlantedOrphan {
  invoiceId: string;
  uuid: string;
}

/**
 * A stamp whose answer was dropped and never retried, made as it happens: with the workers stopped
 * (the caller holds them), a payment is made through the API, and its invoice's frozen XML is sent to
 * the primary PAC with its stamp key while the PAC drops every answer (`dropRate` 1, after stamping).
 * The PAC stamped it; Timbra never heard. Returns the invoice and the UUID the PAC's ledger holds.
 */
export async function plantOrphan(options: {
  databaseUrl: string;
  externalId: string;
  makePayment: () => Promise<void>;
  pac: { url: string; user: string; password: string };
  admin: (path: string, body?: object) => Promise<Record<string, unknown>>;
}): Promise<PlantedOrphan> {
  await options.makePayment();
  const db = createPrisma(options.databaseUrl, { poolSize: 1 });
  let invoice: { id: string; frozen_xml: string; stamp_key: string; status: string } | undefined;
  try {
    [invoice] = await db.$queryRaw<{ id: string; frozen_xml: string; stamp_key: string; status: string }[]>`
      SELECT i.id::text, i.frozen_xml, i.stamp_key, i.status FROM invoices i JOIN payments p ON p.id = i.payment_id
      WHERE p.external_id = ${options.externalId} AND i.kind = 'I'`;
  } finally {
    await db.$disconnect();
  }
  const frozen = invoice;
  if (!frozen?.frozen_xml || frozen.status !== 'pending')
    throw new Error(
      `the planted payment's invoice is not pending with a frozen XML: ${JSON.stringify(frozen?.status)}`,
    );
  const { url, user, password } = options.pac;
  const pac = new SwClient({
    name: 'primary',
    baseUrl: url,
    user,
    password,
    satStatusUrl: `${url}/ConsultaCFDIService.svc`,
    timeouts: { connectMs: 1_000, responseMs: 3_000 },
  });
  await options.admin('/faults', { instance: 'primary', reset: true, dropRate: 1, dropMode: 'destroy' });
  try {
    await pac.stamp(frozen.frozen_xml, { idempotencyKey: frozen.stamp_key });
    throw new Error('the primary answered a stamp it was told to drop');
  } catch (error) {
    if ((error as Error).message.startsWith('the primary answered')) throw error;
  } finally {
    await options.admin('/faults', { instance: 'primary', reset: true });
  }
  const ledger = (await options.admin('/ledger')) as { stamps: { uuid: string; customid?: string }[] };
  const stamp = ledger.stamps.find((st) => st.customid === frozen.stamp_key);
  if (!stamp) throw new Error('the planted stamp is not in the primary’s ledger');
  return { invoiceId: frozen.id, uuid: stamp.uuid.toUpperCase() };
}

/**
 * The planted orphan found and adopted: one reconciliation of its organization through the ops CLI
 * must report it `adopted`, and the invoice must then hold the PAC's UUID with its outbox row done.
 */
export async function adoptionFigure(options: {
  organization: ChaosOrganization;
  planted: PlantedOrphan;
  databaseUrl: string;
  descargaUrl: string;
  log: (line: string) => void;
}): Promise<Figure> {
  const env = reconcileEnv({ ...options, organizations: [options.organization] });
  const run = await reconcile(options.organization, env);
  const adopted = (run.report?.findings ?? []).filter((f) => f.kind === 'adopted');
  const db = createPrisma(options.databaseUrl, { poolSize: 1 });
  let row: { uuid: string | null; status: string; outbox: string } | undefined;
  try {
    [row] = await db.$queryRaw<{ uuid: string | null; status: string; outbox: string }[]>`
      SELECT i.uuid, i.status, string_agg(o.status, ',') AS outbox FROM invoices i
      JOIN outbox o ON o.invoice_id = i.id AND o.kind = 'stamp'
      WHERE i.id = ${options.planted.invoiceId}::uuid GROUP BY i.id, i.organization_id`;
  } finally {
    await db.$disconnect();
  }
  const found = adopted.filter(
    (f) => f.invoiceId === options.planted.invoiceId && f.uuid.toUpperCase() === options.planted.uuid,
  ).length;
  const held = row?.uuid?.toUpperCase() === options.planted.uuid && row.status === 'stamped' && row.outbox === 'done';
  options.log(
    `planted orphan ${options.planted.uuid}: reconciliation exit ${run.status}, ${adopted.length} adopted; the invoice is ${row?.status} with ${row?.uuid ?? 'no UUID'}, its outbox row ${row?.outbox}`,
  );
  return {
    figure: 'SAT record: a planted orphan (answer dropped, never retried) found and adopted, its invoice stamped',
    value: `${found} of 1 adopted${adopted.length > found ? ` (and ${adopted.length - found} others)` : ''}; invoice ${held ? 'stamped with its UUID' : `${row?.status ?? 'missing'} (${row?.uuid ?? 'no UUID'})`}`,
    must: '1 of 1; stamped with its UUID',
    ok: found === 1 && adopted.length === 1 && held,
  };
}

/** The table's rows: the SAT's view of the run, per organization summed. */
export async function satRecordFigures(options: {
  organizations: readonly ChaosOrganization[];
  databaseUrl: string;
  descargaUrl: string;
  log: (line: string) => void;
}): Promise<Figure[]> {
  const env = reconcileEnv(options);
  const runs: { organization: ChaosOrganization; status: number; report?: Reconciled; stderr: string }[] = [];
  for (const organization of options.organizations) {
    const run = { organization, ...(await reconcile(organization, env)) };
    runs.push(run);
    options.log(
      run.report
        ? `SAT record of ${organization.rfc}: ${run.report.sat} CFDIs listed, ${run.report.matched} matched, ${run.report.findings.length} findings`
        : `SAT record of ${organization.rfc}: not read (exit ${run.status}) ${run.stderr.trim().slice(0, 300)}`,
    );
  }
  const findings = runs.flatMap((r) => r.report?.findings ?? []);
  const count = (kinds: string[]) => findings.filter((f) => kinds.includes(f.kind)).length;
  const unread = runs.filter((r) => !r.report).map((r) => r.organization.rfc);
  const listed = runs.reduce((n, r) => n + (r.report?.sat ?? 0), 0);
  const matched = runs.reduce((n, r) => n + (r.report?.matched ?? 0), 0);
  const adopted = findings.filter((f) => f.kind === 'adopted');
  return [
    {
      figure: 'SAT record (Descarga Masiva): organizations read; CFDIs it lists, found in our DB',
      value: `${runs.length - unread.length} of ${runs.length}${unread.length ? ` (not read: ${unread.join(', ')})` : ''}; ${matched + adopted.length} of ${listed}`,
      must: `all ${runs.length}; all`,
      ok: unread.length === 0 && matched + adopted.length === listed && listed > 0,
    },
    {
      figure: 'SAT record: orphan timbres (at the SAT, not ours); adopted',
      value: `${count(['orphan'])}; ${adopted.length}`,
      must: '0; 0',
      ok: count(['orphan']) === 0 && adopted.length === 0,
    },
    {
      figure: 'SAT record: stamped here, missing at the SAT',
      value: count(['missing']),
      must: '0',
      ok: count(['missing']) === 0,
    },
    {
      figure: 'SAT record: status, total or receptor differences',
      value: count(['cancelled_at_sat', 'vigente_at_sat', 'total_differs', 'receptor_differs']),
      must: '0',
      ok: count(['cancelled_at_sat', 'vigente_at_sat', 'total_differs', 'receptor_differs']) === 0,
    },
  ];
}
