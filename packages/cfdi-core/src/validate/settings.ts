/**
 * The fiscal settings an emisor runs with, checked against the SAT catalogues and rules before
 * anything is invoiced: a setting no PAC would accept stops the process at start-up, naming the
 * setting and the rule, rather than turning every invoice into a rejection in production while every
 * test passes.
 *
 * What cannot be checked offline is checked by shape: c_ClaveProdServ and c_CodigoPostal are not in
 * sat/catalogos (docs/fiscal-rules.md).
 */
import { buildComprobante } from '../build/build-comprobante.ts';
import { computeAmounts } from '../build/compute-totals.ts';
import { CfdiValidationError, type ValidationIssue } from '../errors.ts';
import { DEFAULT_TIME_ZONE, formatFecha } from '../fecha.ts';
import { checkSatRules, NOMBRE_PUBLICO_GENERAL, violationIssues, type OperatorCatalogs } from '../rules/index.ts';
import { C_PERIODICIDAD } from './catalogs.ts';
import { satText } from './request-schema.ts';
import { RFC_PUBLICO_GENERAL } from './rfc.ts';
import { validateInvoiceRequest } from './validate-request.ts';

export interface FiscalSettings {
  emisorRfc: string;
  regimenFiscal: string;
  lugarExpedicion: string;
  claveProdServ: string;
  claveUnidad: string;
  /** InformacionGlobal's Periodicidad for público en general; undefined: the régimen's default. */
  periodicidad: string | undefined;
  /** The series folios are taken in (Ingresos, Egresos, Pagos). */
  series?: readonly string[];
}

/** The régimen that invoices público en general bimonthly: Incorporación Fiscal. */
const BIMESTRAL_REGIMEN = '621';

/** The Periodicidad to use: the one set, else 05 (bimestral) for régimen 621 and 01 (diario) for any other. */
export function periodicidadFor(regimenFiscal: string, periodicidad: string | undefined): string {
  return periodicidad ?? (regimenFiscal === BIMESTRAL_REGIMEN ? '05' : '01');
}

/**
 * What is wrong with `settings`, one line per problem, each naming the setting (through `names`,
 * e.g. the environment variable) and the SAT rule or catalogue it breaks (against the operator's
 * `catalogs` when given). Empty: fine.
 *
 * One owner for the rules: the settings are written into the document they produce — an Ingreso to
 * público en general with the default concepto — and that document is run through the request
 * validation and the SAT rule engine; each problem is traced back to the setting that put the value
 * there. Series are checked by the schema's shape (1–25 characters, no '|').
 */
export function fiscalSettingsProblems(
  settings: FiscalSettings,
  names: Readonly<Record<keyof FiscalSettings, string>>,
  catalogs: OperatorCatalogs = {},
): string[] {
  const problems: string[] = [];
  const periodicidad = periodicidadFor(settings.regimenFiscal, settings.periodicidad);
  for (const serie of settings.series ?? []) {
    const shape = satText(25).safeParse(serie);
    if (!shape.success)
      problems.push(`${names.series}: serie '${serie}' ${shape.error.issues[0]?.message ?? 'invalid'}`);
  }
  for (const issue of documentIssues(settings, periodicidad, catalogs)) {
    const key = SETTING_OF.find(([re]) => re.test(issue.path))?.[1];
    const value = key ? String(key === 'periodicidad' ? periodicidad : settings[key]) : undefined;
    const line = `${key ? names[key] : 'settings'}${value !== undefined ? ` '${value}'` : ''}: ${issue.message}`;
    if (!problems.includes(line)) problems.push(line);
  }
  // Timbra's own choice: an emisor in Incorporación Fiscal invoices público en general bimonthly.
  if (
    Object.hasOwn(C_PERIODICIDAD, periodicidad) &&
    settings.regimenFiscal === BIMESTRAL_REGIMEN &&
    periodicidad !== '05'
  )
    problems.push(
      `${names.periodicidad} '${periodicidad}': régimen ${BIMESTRAL_REGIMEN} (Incorporación Fiscal) invoices público en general bimonthly: Periodicidad 05`,
    );
  return problems;
}

/** Which setting a problem's path (request field or XPath) comes from. */
const SETTING_OF: readonly [RegExp, keyof FiscalSettings][] = [
  [/^emisor\.rfc$|Emisor\/@Rfc$/, 'emisorRfc'],
  [/^emisor\.regimenFiscal$|Emisor\/@RegimenFiscal$/, 'regimenFiscal'],
  [/^lugarExpedicion$|@LugarExpedicion$|domicilioFiscalReceptor$|@DomicilioFiscalReceptor$/i, 'lugarExpedicion'],
  [/claveProdServ$|@ClaveProdServ$/, 'claveProdServ'],
  [/claveUnidad$|@ClaveUnidad$/, 'claveUnidad'],
  [/informacionGlobal|InformacionGlobal/, 'periodicidad'],
];

/** The problems of the document these settings produce (request validation, then the SAT rules). */
function documentIssues(settings: FiscalSettings, periodicidad: string, catalogs: OperatorCatalogs): ValidationIssue[] {
  const issuedAt = new Date();
  const timeZone = DEFAULT_TIME_ZONE;
  const fecha = formatFecha(issuedAt, timeZone);
  try {
    const request = validateInvoiceRequest({
      tipoDeComprobante: 'I',
      sourceId: 'settings',
      issuedAt: issuedAt.toISOString(),
      timeZone,
      lugarExpedicion: settings.lugarExpedicion,
      formaPago: '01',
      metodoPago: 'PUE',
      emisor: { rfc: settings.emisorRfc, nombre: 'EMISOR', regimenFiscal: settings.regimenFiscal },
      receptor: {
        rfc: RFC_PUBLICO_GENERAL,
        nombre: NOMBRE_PUBLICO_GENERAL,
        domicilioFiscalReceptor: settings.lugarExpedicion,
        regimenFiscalReceptor: '616',
        usoCFDI: 'S01',
      },
      informacionGlobal: {
        periodicidad,
        meses: periodicidad === '05' ? String(12 + Math.ceil(Number(fecha.slice(5, 7)) / 2)) : fecha.slice(5, 7),
        año: Number(fecha.slice(0, 4)),
      },
      conceptos: [
        {
          claveProdServ: settings.claveProdServ,
          cantidad: '1',
          claveUnidad: settings.claveUnidad,
          descripcion: 'Venta',
          valorUnitario: '100.00',
          objetoImp: '02',
          traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
        },
      ],
    });
    const tree = buildComprobante({
      request,
      fecha,
      noCertificado: '00000000000000000000',
      certificado: '',
      amounts: computeAmounts(request),
    });
    return violationIssues(checkSatRules(tree, catalogs));
  } catch (error) {
    if (error instanceof CfdiValidationError) return [...error.issues];
    throw error;
  }
}
