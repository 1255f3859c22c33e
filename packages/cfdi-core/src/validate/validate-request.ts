import { CfdiValidationError, type ValidationIssue } from '../errors.ts';
import { isKnownTimeZone } from '../fecha.ts';
import { decimalsOf, Dec } from '../build/money.ts';
import {
  EXPORTACION,
  FORMA_PAGO,
  IMPUESTO,
  MESES,
  METODO_PAGO,
  MONEDA,
  OBJETO_IMP,
  PERIODICIDAD,
  REGIMEN_FISCAL,
  TASA_RETENCION_MAX,
  TASA_TRASLADO,
  TIPO_FACTOR,
  TIPO_RELACION,
  USO_CFDI,
} from './catalogs.ts';
import { usoCfdiAllowed } from './uso-cfdi.ts';
import { invoiceRequestSchema, type InvoiceRequest, type TrasladoRequest } from './request-schema.ts';
import { RFC_PUBLICO_GENERAL, rfcKind } from './rfc.ts';
import { normalizeSpace } from './text.ts';

/** Name the SAT requires on a CFDI to público en general (RFC XAXX010101000). */
export const NOMBRE_PUBLICO_GENERAL = 'PUBLICO EN GENERAL';

// Amounts are limited to what t_Importe can hold (18 integer digits); well below, so that sums of
// many conceptos still fit.
const MAX_AMOUNT = new Dec('1000000000000000');

/**
 * Validates an invoice request: its shape (zod) and the Anexo 20 rules that tie its fields together
 * (catálogos, RFC shapes, régimen per persona type, taxes per ObjetoImp, payment method rules,
 * público en general). Returns the request with defaults applied.
 *
 * @throws CfdiValidationError listing every problem found (code CFDI_INVALID_REQUEST).
 */
export function validateInvoiceRequest(input: unknown): InvoiceRequest {
  const parsed = invoiceRequestSchema.safeParse(input);
  if (!parsed.success) {
    throw new CfdiValidationError(
      parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
    );
  }
  const issues = checkRules(parsed.data);
  if (issues.length > 0) throw new CfdiValidationError(issues);
  return parsed.data;
}

function checkRules(r: InvoiceRequest): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const add = (path: string, message: string) => issues.push({ path, message });
  const inCatalog = (
    path: string,
    value: string | undefined,
    catalog: Readonly<Record<string, unknown>>,
    name: string,
  ) => {
    if (value !== undefined && !Object.hasOwn(catalog, value)) add(path, `'${value}' is not in ${name}`);
  };

  if (r.timeZone !== undefined && !isKnownTimeZone(r.timeZone)) add('timeZone', `unknown time zone '${r.timeZone}'`);
  if (!Object.hasOwn(MONEDA, r.moneda)) add('moneda', `'${r.moneda}' is not a supported c_Moneda`);
  inCatalog('exportacion', r.exportacion, EXPORTACION, 'c_Exportacion');
  // CFDI40122: Exportacion 02 (definitiva A1) needs the Comercio Exterior complement, which Timbra does not issue.
  if (r.exportacion === '02')
    add('exportacion', 'CFDI40122: 02 requires the Comercio Exterior complement, which Timbra does not issue');
  inCatalog('formaPago', r.formaPago, FORMA_PAGO, 'c_FormaPago');
  inCatalog('metodoPago', r.metodoPago, METODO_PAGO, 'c_MetodoPago');
  if (r.moneda === 'MXN' && r.tipoCambio !== undefined && r.tipoCambio !== '1') {
    add('tipoCambio', 'must be absent or 1 when moneda is MXN');
  }
  if (r.moneda !== 'MXN' && r.moneda !== 'XXX' && r.tipoCambio === undefined) {
    add('tipoCambio', `is required when moneda is ${r.moneda}`);
  }

  const emisorKind = rfcKind(r.emisor.rfc);
  if (emisorKind === null || emisorKind === 'generico') add('emisor.rfc', `'${r.emisor.rfc}' is not a valid RFC`);
  checkRegimen(r.emisor.regimenFiscal, emisorKind, 'emisor.regimenFiscal', add);

  const receptorKind = rfcKind(r.receptor.rfc);
  if (receptorKind === null) add('receptor.rfc', `'${r.receptor.rfc}' is not a valid RFC`);
  inCatalog('receptor.usoCFDI', r.receptor.usoCFDI, USO_CFDI, 'c_UsoCFDI');
  if (receptorKind === 'generico') {
    if (r.receptor.regimenFiscalReceptor !== '616')
      add('receptor.regimenFiscalReceptor', 'must be 616 for a generic RFC');
    if (r.receptor.usoCFDI !== 'S01' && r.receptor.usoCFDI !== 'CP01')
      add('receptor.usoCFDI', 'must be S01 (or CP01 for a Pago) for a generic RFC');
  } else {
    checkRegimen(r.receptor.regimenFiscalReceptor, receptorKind, 'receptor.regimenFiscalReceptor', add);
    if (
      (receptorKind === 'fisica' || receptorKind === 'moral') &&
      Object.hasOwn(USO_CFDI, r.receptor.usoCFDI) &&
      !usoCfdiAllowed(r.receptor.usoCFDI, r.receptor.regimenFiscalReceptor, receptorKind)
    )
      add(
        'receptor.usoCFDI',
        `CFDI40161: UsoCFDI ${r.receptor.usoCFDI} does not apply to a persona ${receptorKind === 'fisica' ? 'física' : 'moral'} in régimen ${r.receptor.regimenFiscalReceptor} (c_UsoCFDI)`,
      );
  }
  if (receptorKind === 'generico' && r.receptor.domicilioFiscalReceptor !== r.lugarExpedicion) {
    // CFDI40149: for XAXX010101000 and XEXX010101000 alike.
    add(
      'receptor.domicilioFiscalReceptor',
      `CFDI40149: must equal lugarExpedicion for the generic RFC ${r.receptor.rfc}`,
    );
  }
  if (receptorKind !== 'generico' && normalizeSpace(r.receptor.nombre).toUpperCase() === NOMBRE_PUBLICO_GENERAL) {
    // CFDI40146: "PUBLICO EN GENERAL" is the name of the generic RFC only.
    add('receptor.nombre', `CFDI40146: ${NOMBRE_PUBLICO_GENERAL} is only the name of ${RFC_PUBLICO_GENERAL}`);
  }
  if (r.receptor.rfc === RFC_PUBLICO_GENERAL) {
    if (r.receptor.nombre === NOMBRE_PUBLICO_GENERAL && r.tipoDeComprobante === 'I' && !r.informacionGlobal) {
      add('informacionGlobal', 'is required for a CFDI global to público en general');
    }
  }
  if (r.informacionGlobal) {
    if (r.receptor.rfc !== RFC_PUBLICO_GENERAL)
      add('informacionGlobal', `only applies when receptor.rfc is ${RFC_PUBLICO_GENERAL}`);
    inCatalog('informacionGlobal.periodicidad', r.informacionGlobal.periodicidad, PERIODICIDAD, 'c_Periodicidad');
    inCatalog('informacionGlobal.meses', r.informacionGlobal.meses, MESES, 'c_Meses');
  }
  (r.cfdiRelacionados ?? []).forEach((rel, i) =>
    inCatalog(`cfdiRelacionados.${i}.tipoRelacion`, rel.tipoRelacion, TIPO_RELACION, 'c_TipoRelacion'),
  );

  if (r.tipoDeComprobante === 'P') checkPago(r, add);
  else checkIngresoEgreso(r, add);
  return issues;
}

type Add = (path: string, message: string) => void;

function checkRegimen(regimen: string, kind: ReturnType<typeof rfcKind>, path: string, add: Add): void {
  const entry = REGIMEN_FISCAL[regimen];
  if (!entry) {
    add(path, `'${regimen}' is not in c_RegimenFiscal`);
  } else if ((kind === 'fisica' || kind === 'moral') && !entry.applies.includes(kind)) {
    add(path, `régimen ${regimen} does not apply to a persona ${kind === 'fisica' ? 'física' : 'moral'}`);
  }
}

function checkIngresoEgreso(r: InvoiceRequest, add: Add): void {
  if (r.pago) add('pago', 'only applies to tipoDeComprobante P');
  if (r.formaPago === undefined) add('formaPago', 'is required');
  if (r.metodoPago === undefined) add('metodoPago', 'is required');
  if (r.metodoPago === 'PPD' && r.formaPago !== undefined && r.formaPago !== '99')
    add('formaPago', 'must be 99 when metodoPago is PPD');
  if (r.moneda === 'XXX') add('moneda', 'XXX only applies to tipoDeComprobante P');
  if (r.tipoDeComprobante === 'E' && !(r.cfdiRelacionados ?? []).length) {
    add('cfdiRelacionados', 'an Egreso must relate the CFDI it corrects or refunds');
  }
  if (r.receptor.usoCFDI === 'CP01') add('receptor.usoCFDI', 'CP01 only applies to tipoDeComprobante P');
  const conceptos = r.conceptos ?? [];
  if (conceptos.length === 0) add('conceptos', 'at least one concepto is required');
  const decimals = MONEDA[r.moneda]?.decimals ?? 2;
  let total = new Dec(0);
  conceptos.forEach((c, i) => {
    const at = `conceptos.${i}`;
    if (!Object.hasOwn(OBJETO_IMP, c.objetoImp)) add(`${at}.objetoImp`, `'${c.objetoImp}' is not in c_ObjetoImp`);
    const importe = new Dec(c.cantidad).times(c.valorUnitario);
    if (new Dec(c.cantidad).isZero()) add(`${at}.cantidad`, 'must be greater than 0');
    if (importe.isGreaterThan(MAX_AMOUNT)) add(`${at}`, 'importe (cantidad × valorUnitario) is too large');
    total = total.plus(importe);
    if (c.descuento !== undefined) {
      if (decimalsOf(c.descuento) > decimals)
        add(`${at}.descuento`, `must have at most ${decimals} decimals in ${r.moneda}`);
      if (new Dec(c.descuento).isGreaterThan(importe.decimalPlaces(decimals, Dec.ROUND_HALF_UP)))
        add(`${at}.descuento`, 'must not exceed the importe');
    }
    const hasTaxes = c.traslados.length + c.retenciones.length > 0;
    // cfdv40.xsd: a traslado/retención Base must be at least 0.000001.
    const base = importe.decimalPlaces(decimals, Dec.ROUND_HALF_UP).minus(c.descuento ?? 0);
    if (c.objetoImp === '02' && hasTaxes && !base.isGreaterThan(0)) {
      add(`${at}`, 'the taxable base (importe − descuento) must be greater than 0 when taxes are broken down');
    }
    if (c.objetoImp === '02' && !hasTaxes)
      add(`${at}.objetoImp`, 'ObjetoImp 02 needs at least one traslado or retención');
    if (c.objetoImp !== '02' && hasTaxes) add(`${at}.objetoImp`, 'taxes are only broken down when ObjetoImp is 02');
    c.traslados.forEach((t, j) => checkTraslado(t, `${at}.traslados.${j}`, add));
    const seenTraslado = new Set(c.traslados.map((t) => `${t.impuesto}|${t.tipoFactor}`));
    if (seenTraslado.size !== c.traslados.length)
      add(`${at}.traslados`, 'an impuesto appears twice with the same TipoFactor');
    c.retenciones.forEach((t, j) => {
      const p = `${at}.retenciones.${j}`;
      if (!Object.hasOwn(IMPUESTO, t.impuesto)) add(`${p}.impuesto`, `'${t.impuesto}' is not in c_Impuesto`);
      if (t.tipoFactor !== 'Tasa') add(`${p}.tipoFactor`, 'retenciones are supported with TipoFactor Tasa only');
      const max = TASA_RETENCION_MAX[t.impuesto];
      if (max !== undefined && new Dec(t.tasaOCuota).isGreaterThan(max))
        add(`${p}.tasaOCuota`, `must not exceed ${max}`);
    });
    if (new Set(c.retenciones.map((t) => t.impuesto)).size !== c.retenciones.length)
      add(`${at}.retenciones`, 'an impuesto is retained twice');
  });
  if (total.isGreaterThan(MAX_AMOUNT)) add('conceptos', 'the total is too large');
}

function checkTraslado(t: TrasladoRequest, p: string, add: Add): void {
  if (!Object.hasOwn(IMPUESTO, t.impuesto)) add(`${p}.impuesto`, `'${t.impuesto}' is not in c_Impuesto`);
  if (!Object.hasOwn(TIPO_FACTOR, t.tipoFactor)) add(`${p}.tipoFactor`, `'${t.tipoFactor}' is not in c_TipoFactor`);
  if (t.impuesto === '001') add(`${p}.impuesto`, 'ISR is never transferred (traslado)');
  if (t.tipoFactor === 'Cuota') add(`${p}.tipoFactor`, 'TipoFactor Cuota is not supported');
  if (t.tipoFactor === 'Exento') {
    if (t.impuesto !== '002') add(`${p}.tipoFactor`, 'only IVA can be Exento');
    if (t.tasaOCuota !== undefined) add(`${p}.tasaOCuota`, 'must be absent when TipoFactor is Exento');
  } else if (t.tipoFactor === 'Tasa') {
    const allowed = TASA_TRASLADO[`${t.impuesto}|Tasa`];
    if (t.tasaOCuota === undefined) add(`${p}.tasaOCuota`, 'is required when TipoFactor is Tasa');
    else if (allowed && !allowed.includes(t.tasaOCuota))
      add(`${p}.tasaOCuota`, `'${t.tasaOCuota}' is not a valid rate (${allowed.join(', ')})`);
  }
}

function checkPago(r: InvoiceRequest, add: Add): void {
  if (r.moneda !== 'XXX') add('moneda', 'must be XXX for tipoDeComprobante P');
  if (r.tipoCambio !== undefined) add('tipoCambio', 'CFDI40116: must be absent for tipoDeComprobante P (moneda XXX)');
  if (r.formaPago !== undefined) add('formaPago', 'must be absent for tipoDeComprobante P');
  if (r.metodoPago !== undefined) add('metodoPago', 'must be absent for tipoDeComprobante P');
  if (r.conceptos !== undefined)
    add('conceptos', 'must be absent for tipoDeComprobante P (the Pago concepto is fixed)');
  if (r.receptor.usoCFDI !== 'CP01') add('receptor.usoCFDI', 'must be CP01 for tipoDeComprobante P');
  const pago = r.pago;
  if (!pago) {
    add('pago', 'is required for tipoDeComprobante P');
    return;
  }
  inCatalog('pago.formaDePagoP', pago.formaDePagoP, FORMA_PAGO, 'c_FormaPago', add);
  if (pago.formaDePagoP === '99') add('pago.formaDePagoP', 'must not be 99 in a Pago');
  if (!Object.hasOwn(MONEDA, pago.monedaP) || pago.monedaP === 'XXX')
    add('pago.monedaP', `'${pago.monedaP}' is not a supported c_Moneda`);
  if (pago.monedaP === 'MXN' && pago.tipoCambioP !== undefined && pago.tipoCambioP !== '1')
    add('pago.tipoCambioP', 'must be 1 when monedaP is MXN');
  if (pago.monedaP !== 'MXN' && pago.tipoCambioP === undefined)
    add('pago.tipoCambioP', `is required when monedaP is ${pago.monedaP}`);
  const decimals = MONEDA[pago.monedaP]?.decimals ?? 2;
  if (decimalsOf(pago.monto) > decimals) add('pago.monto', `must have at most ${decimals} decimals in ${pago.monedaP}`);
  if (new Dec(pago.monto).isZero()) add('pago.monto', 'must be greater than 0');
  let pagado = new Dec(0);
  pago.doctosRelacionados.forEach((d, i) => {
    const p = `pago.doctosRelacionados.${i}`;
    if (d.monedaDR !== pago.monedaP)
      add(`${p}.monedaDR`, 'must equal monedaP (payments in another currency are not supported)');
    if (d.equivalenciaDR !== undefined && d.equivalenciaDR !== '1')
      add(`${p}.equivalenciaDR`, 'must be 1 when monedaDR equals monedaP');
    if (!Object.hasOwn(OBJETO_IMP, d.objetoImpDR)) add(`${p}.objetoImpDR`, `'${d.objetoImpDR}' is not in c_ObjetoImp`);
    if (decimalsOf(d.impPagado) > decimals) add(`${p}.impPagado`, `must have at most ${decimals} decimals`);
    if (decimalsOf(d.impSaldoAnt) > decimals) add(`${p}.impSaldoAnt`, `must have at most ${decimals} decimals`);
    if (new Dec(d.impPagado).isZero()) add(`${p}.impPagado`, 'must be greater than 0');
    if (new Dec(d.impPagado).isGreaterThan(d.impSaldoAnt)) add(`${p}.impPagado`, 'must not exceed impSaldoAnt');
    if (d.objetoImpDR === '02' && d.trasladosDR.length === 0)
      add(`${p}.objetoImpDR`, 'ObjetoImpDR 02 needs trasladosDR');
    if (d.objetoImpDR !== '02' && d.trasladosDR.length > 0)
      add(`${p}.trasladosDR`, 'only apply when ObjetoImpDR is 02');
    d.trasladosDR.forEach((t, j) => checkTraslado(t, `${p}.trasladosDR.${j}`, add));
    pagado = pagado.plus(d.impPagado);
  });
  if (pagado.isGreaterThan(pago.monto)) add('pago.monto', 'must cover the sum of impPagado of the related documents');
}

function inCatalog(
  path: string,
  value: string,
  catalog: Readonly<Record<string, unknown>>,
  name: string,
  add: Add,
): void {
  if (!Object.hasOwn(catalog, value)) add(path, `'${value}' is not in ${name}`);
}
