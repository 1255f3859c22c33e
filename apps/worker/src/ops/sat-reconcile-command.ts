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
  if (!settings.EFIRMA_DIR) throw new CannotCheck('EFIRMA_DIR is not set: no e.firma to ask the SAT with');
  const { efirmaFiles } = await import('@timbra/cfdi-node');
  const efirma = efirmaFiles(settings.EFIRMA_DIR, organization.rfc);
  if (!efirma) throw new CannotCheck(`no e.firma of ${organization.rfc} in EFIRMA_DIR (${organization.rfc}.cer)`);
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
    throw new CannotCheck(`the SAT's record could not be read: ${(error as Error).message}`);
  }
  out({ organization: organization.rfc, ...result }, satReport(organization.rfc, result));
  setExitCode(result.findings.some(needsPerson) ? 1 : 0);
}
