/**
 * The chaos run's last word: each organization's invoices against the SAT's own record, as
 * production checks them — `npm run ops -- reconcile --source sat` (the real CLI, its own process)
 * asking the sandbox's Descarga Masiva with a test e.firma per organization (issued by the tests'
 * CA, which the sandbox trusts). Nothing may be adopted: every stamp's answer was recorded.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** The table's rows: the SAT's view of the run, per organization summed. */
export async function satRecordFigures(options: {
  organizations: readonly ChaosOrganization[];
  databaseUrl: string;
  descargaUrl: string;
  log: (line: string) => void;
}): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-chaos-efirma-'));
  const env = {
    DATABASE_URL: options.databaseUrl,
    EFIRMA_DIR: dir,
    SAT_DESCARGA_URL: options.descargaUrl,
    // The sandbox's SAT lists a stamp at once (SANDBOX_SAT_LAG_MS 0): nothing may be missing.
    SAT_LAG_MS: '0',
    SAT_POLL_MS: '200',
  };
  const runs: { organization: ChaosOrganization; status: number; report?: Reconciled; stderr: string }[] = [];
  for (const organization of options.organizations) {
    const efirma = testEfirmaFor(organization.rfc, organization.rfc);
    writeFileSync(join(dir, `${organization.rfc}.cer`), efirma.cer);
    writeFileSync(join(dir, `${organization.rfc}.key`), efirma.key);
    writeFileSync(join(dir, `${organization.rfc}.password`), efirma.password);
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
