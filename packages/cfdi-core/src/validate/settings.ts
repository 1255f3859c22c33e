/**
 * The fiscal settings an emisor runs with, checked against the SAT catalogues before anything is
 * invoiced: a setting no PAC would accept stops the process at start-up, naming the setting, rather
 * than turning every invoice into a rejection in production while every test passes.
 *
 * What cannot be checked offline is checked by shape: c_ClaveProdServ and c_CodigoPostal are not in
 * sat/catalogos (docs: "Fiscal settings").
 */
import { C_CLAVE_UNIDAD, C_PERIODICIDAD, REGIMEN_FISCAL } from './catalogs.ts';
import { rfcKind } from './rfc.ts';

export interface FiscalSettings {
  emisorRfc: string;
  regimenFiscal: string;
  lugarExpedicion: string;
  claveProdServ: string;
  claveUnidad: string;
  /** InformacionGlobal's Periodicidad for público en general; undefined: the régimen's default. */
  periodicidad: string | undefined;
}

/** The régimen that invoices público en general bimonthly: Incorporación Fiscal. */
const BIMESTRAL_REGIMEN = '621';

/** The Periodicidad to use: the one set, else 05 (bimestral) for régimen 621 and 01 (diario) for any other. */
export function periodicidadFor(regimenFiscal: string, periodicidad: string | undefined): string {
  return periodicidad ?? (regimenFiscal === BIMESTRAL_REGIMEN ? '05' : '01');
}

/**
 * What is wrong with `settings`, one line per problem, each naming the setting (through `names`,
 * e.g. the environment variable) and the catalogue or rule it breaks. Empty: fine.
 */
export function fiscalSettingsProblems(
  settings: FiscalSettings,
  names: Readonly<Record<keyof FiscalSettings, string>>,
): string[] {
  const problems: string[] = [];
  const kind = rfcKind(settings.emisorRfc);
  const regimen = Object.hasOwn(REGIMEN_FISCAL, settings.regimenFiscal)
    ? REGIMEN_FISCAL[settings.regimenFiscal]
    : undefined;
  if (!regimen) problems.push(`${names.regimenFiscal}: '${settings.regimenFiscal}' is not in c_RegimenFiscal`);
  else if ((kind === 'fisica' || kind === 'moral') && !regimen.applies.includes(kind))
    problems.push(
      `${names.regimenFiscal}: régimen ${settings.regimenFiscal} (${regimen.name}) does not apply to a persona ${kind === 'fisica' ? 'física' : 'moral'} (${names.emisorRfc} ${settings.emisorRfc})`,
    );
  if (!/^\d{5}$/.test(settings.lugarExpedicion))
    problems.push(`${names.lugarExpedicion}: a código postal of 5 digits (c_CodigoPostal)`);
  if (!/^\d{8}$/.test(settings.claveProdServ))
    problems.push(`${names.claveProdServ}: a c_ClaveProdServ key of 8 digits`);
  if (!C_CLAVE_UNIDAD.has(settings.claveUnidad))
    problems.push(`${names.claveUnidad}: '${settings.claveUnidad}' is not in c_ClaveUnidad (e.g. ACT, H87, E48)`);
  const periodicidad = periodicidadFor(settings.regimenFiscal, settings.periodicidad);
  if (!Object.hasOwn(C_PERIODICIDAD, periodicidad))
    problems.push(`${names.periodicidad}: '${periodicidad}' is not in c_Periodicidad`);
  else if ((periodicidad === '05') !== (settings.regimenFiscal === BIMESTRAL_REGIMEN))
    problems.push(
      `${names.periodicidad}: Periodicidad 05 (bimestral) is for régimen ${BIMESTRAL_REGIMEN} (Incorporación Fiscal) only, and that régimen invoices público en general bimonthly (05); the emisor is in ${settings.regimenFiscal}`,
    );
  return problems;
}
