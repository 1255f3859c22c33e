/** What recording an organization's payments needs, from its facts, CSD and settings (main.ts, platform mode). */
import { periodicidadFor, type Csd } from '@timbra/cfdi-core';
import type { EffectiveSettings, OrganizationFacts } from '@timbra/db/organizations';
import type { ApiConfig } from '../config.ts';
import type { RecordPaymentDeps } from './record-payment.ts';

/** An organization's `RecordPaymentDeps`: its own facts, CSD and effective settings, the deployment's catalogues and IVA. */
export function paymentDepsIn(config: Pick<ApiConfig, 'catalogs' | 'IVA_TASA' | 'GLOBAL_MAX_CONCEPTOS'>) {
  return (
    organizationId: string,
    facts: OrganizationFacts,
    csd: Csd,
    settings: EffectiveSettings,
  ): RecordPaymentDeps => ({
    csd,
    catalogs: config.catalogs,
    organizationId,
    serieIngreso: settings.series.ingreso,
    serieEgreso: settings.series.egreso,
    seriePago: settings.series.pago,
    settings: {
      emisor: facts,
      concepto: settings.concepto,
      ivaTasa: config.IVA_TASA,
      periodicidad: periodicidadFor(facts.regimenFiscal, settings.publicoGeneral.periodicidad),
    },
    ...(settings.publicoGeneral.mode === 'global'
      ? { global: { maxConceptosPerGlobal: config.GLOBAL_MAX_CONCEPTOS } }
      : {}),
  });
}
