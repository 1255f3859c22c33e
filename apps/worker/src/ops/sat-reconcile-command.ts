/** `npm run ops -- reconcile --source sat`: one organization's period against the SAT's own record. */
import { CannotCheck, db, env, note, organizationDb, organizationNamed, out, setExitCode } from './context.ts';

export interface SatReconcileOptions {
  since?: Date;
  until?: Date;
  organization?: string;
}

export async function reconcileWithSatCommand(options: SatReconcileOptions): Promise<void> {
  const { loadSatRecordConfig } = await import('../config-schema.ts');
  let settings;
  try {
    settings = loadSatRecordConfig(env());
  } catch (error) {
    throw new CannotCheck((error as Error).message);
  }
  await db();
  const organization = await organizationNamed(options.organization);
  const efirma = await organizationEfirma(organization, settings);
  const until = options.until ?? new Date();
  const since = options.since ?? new Date(until.getTime() - settings.SAT_RECONCILE_DAYS * 86_400_000);
  const { runSatReconciliation } = await import('../operations/sat-reconcile.ts');
  const { satReport } = await import('../operations/sat-report.ts');
  const { needsPerson } = await import('../operations/sat-findings.ts');
  note(`asking the SAT (Descarga Masiva) for ${organization.rfc}'s CFDIs; the SAT may take a while to decide\n`);
  let result;
  try {
    result = await runSatReconciliation(await organizationDb(organization.id), efirma, settings, {
      since,
      until,
      runBy: 'ops',
    });
  } catch (error) {
    const { SatReconciliationRunning } = await import('@timbra/db/invoices');
    if (error instanceof SatReconciliationRunning)
      throw new CannotCheck(`${organization.rfc}: ${error.message}; its result will be in sat_reconciliations`);
    throw new CannotCheck(`the SAT's record could not be read: ${(error as Error).message}`);
  }
  out({ organization: organization.rfc, ...result }, satReport(organization.rfc, result));
  setExitCode(result.findings.some(needsPerson) ? 1 : 0);
}

/** The organization's stored e.firma (VAULT_KEYS), else its files in EFIRMA_DIR; exit 3 when neither. */
async function organizationEfirma(
  organization: { id: string; rfc: string },
  settings: { VAULT_KEYS?: string | undefined; EFIRMA_DIR?: string | undefined },
) {
  const { vaultOf } = await import('@timbra/cfdi-node');
  const { efirmaOf } = await import('../operations/sat-efirma.ts');
  const sources = { vault: vaultOf(settings.VAULT_KEYS), EFIRMA_DIR: settings.EFIRMA_DIR };
  let found;
  try {
    found = await efirmaOf(await organizationDb(organization.id), organization, sources);
  } catch (error) {
    throw new CannotCheck(`the e.firma of ${organization.rfc} cannot be used: ${(error as Error).message}`);
  }
  if (!found)
    throw new CannotCheck(
      `no e.firma of ${organization.rfc}: store one (npm run ops -- efirma:upload) or put ${organization.rfc}.cer/.key/.password in EFIRMA_DIR${settings.EFIRMA_DIR ? '' : ' (not set)'}`,
    );
  note(`signing the SAT's requests with the ${found.source === 'stored' ? 'stored' : "EFIRMA_DIR's"} e.firma\n`);
  return found.efirma;
}
