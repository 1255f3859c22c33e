import { CfdiValidationError, type ValidationIssue } from '../errors.ts';
import { isKnownTimeZone } from '../fecha.ts';
import { decimalsOf, Dec } from '../build/money.ts';
import { MONEDA } from './catalogs.ts';
import { invoiceRequestSchema, type InvoiceRequest, type TrasladoRequest } from './request-schema.ts';
import { RFC_PUBLICO_GENERAL, rfcKind } from './rfc.ts';

// Amounts are limited to what t_Importe can hold (18 integer digits); well below, so that sums of
// many conceptos still fit.
const MAX_AMOUNT = new Dec('1000000000000000');

/**
 * Validates an invoice request: its shape (zod) and what the builder needs to write the document the
 * caller meant (a currency Timbra invoices in, an emisor RFC, taxes only where ObjetoImp is 02, no
 * amount it would have to round). The SAT's rules run on the document built from it (src/rules:
 * `freezeComprobante` and `preflight` run both). Returns the request with defaults applied.
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

  if (r.timeZone !== undefined && !isKnownTimeZone(r.timeZone)) add('timeZone', `unknown time zone '${r.timeZone}'`);
  if (!Object.hasOwn(MONEDA, r.moneda)) add('moneda', `'${r.moneda}' is not a currency Timbra invoices in (c_Moneda)`);
  const emisorKind = rfcKind(r.emisor.rfc);
  if (emisorKind === null || emisorKind === 'generico') add('emisor.rfc', `'${r.emisor.rfc}' is not a valid RFC`);
  if (r.informacionGlobal && r.receptor.rfc !== RFC_PUBLICO_GENERAL)
    add('informacionGlobal', `only applies when receptor.rfc is ${RFC_PUBLICO_GENERAL}`);

  if (r.tipoDeComprobante === 'P') checkPago(r, add);
  else checkIngresoEgreso(r, add);
  return issues;
}

type Add = (path: string, message: string) => void;

/**
 * What the request must say for its document to say what the caller meant: checks the builder
 * needs, and what it would otherwise drop or round silently. The SAT's own rules run on the built
 * document (src/rules), not here.
 */
function checkIngresoEgreso(r: InvoiceRequest, add: Add): void {
  if (r.pago) add('pago', 'only applies to tipoDeComprobante P');
  if (r.tipoDeComprobante === 'E' && !(r.cfdiRelacionados ?? []).length) {
    add('cfdiRelacionados', 'an Egreso must relate the CFDI it corrects or refunds');
  }
  const conceptos = r.conceptos ?? [];
  if (conceptos.length === 0) add('conceptos', 'at least one concepto is required');
  const decimals = MONEDA[r.moneda]?.decimals ?? 2;
  let total = new Dec(0);
  conceptos.forEach((c, i) => {
    const at = `conceptos.${i}`;
    const importe = new Dec(c.cantidad).times(c.valorUnitario);
    if (new Dec(c.cantidad).isZero()) add(`${at}.cantidad`, 'must be greater than 0');
    if (importe.isGreaterThan(MAX_AMOUNT)) add(`${at}`, 'importe (cantidad × valorUnitario) is too large');
    total = total.plus(importe);
    if (c.descuento !== undefined) {
      if (decimalsOf(c.descuento) > decimals)
        add(`${at}.descuento`, `must have at most ${decimals} decimals in ${r.moneda}`);
    }
    const hasTaxes = c.traslados.length + c.retenciones.length > 0;
    if (c.objetoImp !== '02' && hasTaxes) add(`${at}.objetoImp`, 'taxes are only broken down when ObjetoImp is 02');
    c.traslados.forEach((t, j) => checkTraslado(t, `${at}.traslados.${j}`, add));
    const seenTraslado = new Set(c.traslados.map((t) => `${t.impuesto}|${t.tipoFactor}`));
    if (seenTraslado.size !== c.traslados.length)
      add(`${at}.traslados`, 'an impuesto appears twice with the same TipoFactor');
    c.retenciones.forEach((t, j) => {
      if (t.tipoFactor !== 'Tasa')
        add(`${at}.retenciones.${j}.tipoFactor`, 'retenciones are supported with TipoFactor Tasa only');
    });
    if (new Set(c.retenciones.map((t) => t.impuesto)).size !== c.retenciones.length)
      add(`${at}.retenciones`, 'an impuesto is retained twice');
  });
  if (total.isGreaterThan(MAX_AMOUNT)) add('conceptos', 'the total is too large');
}

function checkTraslado(t: TrasladoRequest, p: string, add: Add): void {
  if (t.tipoFactor === 'Cuota') add(`${p}.tipoFactor`, 'TipoFactor Cuota is not supported');
  if (t.tipoFactor === 'Exento' && t.tasaOCuota !== undefined)
    add(`${p}.tasaOCuota`, 'must be absent when TipoFactor is Exento');
  if (t.tipoFactor === 'Tasa' && t.tasaOCuota === undefined)
    add(`${p}.tasaOCuota`, 'is required when TipoFactor is Tasa');
}

function checkPago(r: InvoiceRequest, add: Add): void {
  if (r.conceptos !== undefined)
    add('conceptos', 'must be absent for tipoDeComprobante P (the Pago concepto is fixed)');
  const pago = r.pago;
  if (!pago) {
    add('pago', 'is required for tipoDeComprobante P');
    return;
  }
  if (!Object.hasOwn(MONEDA, pago.monedaP) || pago.monedaP === 'XXX')
    add('pago.monedaP', `'${pago.monedaP}' is not a currency Timbra invoices in (c_Moneda)`);
  const decimals = MONEDA[pago.monedaP]?.decimals ?? 2;
  if (decimalsOf(pago.monto) > decimals) add('pago.monto', `must have at most ${decimals} decimals in ${pago.monedaP}`);
  pago.doctosRelacionados.forEach((d, i) => {
    const p = `pago.doctosRelacionados.${i}`;
    if (decimalsOf(d.impPagado) > decimals) add(`${p}.impPagado`, `must have at most ${decimals} decimals`);
    if (decimalsOf(d.impSaldoAnt) > decimals) add(`${p}.impSaldoAnt`, `must have at most ${decimals} decimals`);
    if (d.objetoImpDR !== '02' && d.trasladosDR.length > 0)
      add(`${p}.trasladosDR`, 'only apply when ObjetoImpDR is 02');
    d.trasladosDR.forEach((t, j) => checkTraslado(t, `${p}.trasladosDR.${j}`, add));
  });
}
