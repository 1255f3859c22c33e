/**
 * An organization's own settings (PATCH /v1/organizations/:id) and the SAT's rules on them with its
 * facts — at its making (the deployment's settings) and at each change.
 */
import { z } from 'zod';
import { fiscalSettingsProblems, type OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { ensureSeries } from '@timbra/db/invoices';
import {
  effectiveSettings,
  mergeSettings,
  ORGANIZATION_SETTINGS,
  organizationSettings,
  saveOrganizationSettings,
  testTwinOf,
  type EffectiveSettings,
  type OrganizationFacts,
} from '@timbra/db/organizations';
import { ApiError } from '../http/errors.ts';
import { validation } from '../http/lists.ts';

/** The facts' and settings' problems against the SAT's rules (cfdi-core's one owner), as 422 details. */
export function fiscalProblems(
  facts: OrganizationFacts,
  settings: EffectiveSettings,
  catalogs: OperatorCatalogs | undefined,
): { path: string; message: string }[] {
  const problems = fiscalSettingsProblems(
    {
      emisorRfc: facts.rfc,
      regimenFiscal: facts.regimenFiscal,
      lugarExpedicion: facts.lugarExpedicion,
      claveProdServ: settings.concepto.claveProdServ,
      claveUnidad: settings.concepto.claveUnidad,
      periodicidad: settings.publicoGeneral.periodicidad,
      series: [settings.series.ingreso, settings.series.egreso, settings.series.pago],
    },
    {
      emisorRfc: 'rfc',
      regimenFiscal: 'regimenFiscal',
      lugarExpedicion: 'lugarExpedicion',
      claveProdServ: 'settings.concepto.claveProdServ',
      claveUnidad: 'settings.concepto.claveUnidad',
      periodicidad: 'settings.publicoGeneral.periodicidad',
      series: 'settings.series',
    },
    catalogs,
  );
  return problems.map((line) => ({ path: /^([\w.]+)/.exec(line)?.[1] ?? 'body', message: line }));
}

/** The series an organization invoices in, as the folio counters know them. */
export const seriesOf = (settings: EffectiveSettings) =>
  [
    { serie: settings.series.ingreso, kind: 'I' },
    { serie: settings.series.egreso, kind: 'E' },
    { serie: settings.series.pago, kind: 'P' },
  ] as const;

/** `changes` over the organization's settings: checked with its facts, stored with its new series' counters. */
export async function updateSettings(
  deps: { owner: PrismaClient; defaults: EffectiveSettings; catalogs?: OperatorCatalogs | undefined },
  organization: OrganizationFacts & { id: string; mode: 'live' | 'test'; liveId: string | null },
  body: unknown,
): Promise<void> {
  // A test twin's settings are its live organization's: changed there, for both.
  if (organization.mode === 'test')
    throw new ApiError('organization_is_test', undefined, [
      { path: 'id', message: `its settings are its live organization's: PATCH ${organization.liveId}` },
    ]);
  const parsed = z.object({ settings: ORGANIZATION_SETTINGS }).strict().safeParse(body);
  if (!parsed.success) throw validation(parsed.error);
  const merged = mergeSettings(await organizationSettings(deps.owner, organization.id), parsed.data.settings);
  const effective = effectiveSettings(merged, deps.defaults);
  const problems = fiscalProblems(organization, effective, deps.catalogs);
  if (problems.length > 0) throw new ApiError('fiscal_rules_failed', undefined, problems);
  const twin = await testTwinOf(deps.owner, organization.id);
  await deps.owner.$transaction(async (tx) => {
    await saveOrganizationSettings(tx, organization.id, merged);
    await ensureSeries(tx, organization.id, seriesOf(effective));
    // Its test twin invoices with its settings: its new series get their counters there too.
    if (twin) await ensureSeries(tx, twin.id, seriesOf(effective));
  });
}
